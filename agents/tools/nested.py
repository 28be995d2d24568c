"""Map, zip, flatten and filter over nested tuples, lists and dicts.

A nested structure is a tree whose inner nodes are tuples (including
namedtuples), lists and dicts, and whose leaves are everything else (numbers,
arrays, tensors, strings, None). The functions here keep the container types of
the first structure, so a namedtuple stays a namedtuple and a dict subclass
stays that subclass. Every function visits the keys of a dict in sorted order,
as `tf.nest` does, so that `map` calls its function in the order of the leaves
`flatten` returns; the dicts it builds keep the key order of the first
structure's dicts.

Pure Python: this module does not import TensorFlow.
"""

import builtins


def map(function, *structures, flatten=False):  # pylint: disable=redefined-builtin
    """Applies a function to the leaves of one or more structures of equal shape.

    Args:
      function: Callable taking one leaf from each structure.
      *structures: Nested structures with identical tree shape.
      flatten: Whether to return the results as a flat tuple instead of the
        structure.

    Returns:
      A structure like the first one holding the results, or a flat tuple of
      the results, one per leaf, if `flatten` is set. The function is called
      on the leaves in the order of `flatten`.

    Raises:
      ValueError: If no structure is given or the structures differ in shape.
      TypeError: If a dict's keys cannot be sorted.
    """
    if not structures:
        raise ValueError('nested.map() needs at least one structure.')
    if flatten:
        return tuple(function(*leaves) for leaves in _aligned_leaves(structures))
    return _map(function, structures, path=())


def zip(*structures, flatten=False):  # pylint: disable=redefined-builtin
    """Combines structures of equal shape into one structure of tuples.

    Args:
      *structures: Nested structures with identical tree shape.
      flatten: Whether to return a flat tuple instead of the structure.

    Returns:
      A structure like the first one whose leaves are tuples holding one leaf
      from each structure; with a single structure, the structure itself.

    Raises:
      ValueError: If no structure is given or the structures differ in shape.
    """
    if len(structures) == 1:
        return map(lambda leaf: leaf, *structures, flatten=flatten)
    return map(lambda *leaves: leaves, *structures, flatten=flatten)


def flatten(structure):
    """Returns the leaves of a structure as a flat tuple, dicts in sorted key order.

    Args:
      structure: Nested structure.

    Returns:
      Tuple of leaves.
    """
    return _flatten(structure)


def pack_as(structure, leaves):
    """A structure like `structure` whose leaves are `leaves`, taken in the order of `flatten`.

    Args:
      structure: Nested structure whose shape to give the leaves.
      leaves: Iterable of as many values as `structure` has leaves.

    Returns:
      The structure holding the leaves; for a lone leaf, the first of them.
    """
    leaves = iter(leaves)
    return map(lambda unused_leaf: next(leaves), structure)


def flatten_up_to(shallow, structure):
    """Returns the parts of a structure at the leaves of a shallower one, in flatten order.

    Below a leaf of `shallow`, `structure` may hold anything, a list or a dict
    included, which stays one part: the leaves of a structure of spaces take
    values such as a list `[0.0]` for a Box.

    Args:
      shallow: Nested structure whose leaves mark where to stop.
      structure: Nested structure that nests like `shallow` down to its leaves.

    Returns:
      Tuple of the parts of `structure`, one per leaf of `shallow`.

    Raises:
      ValueError: If `structure` does not nest like `shallow`.
      TypeError: If a dict's keys cannot be sorted.
    """
    return _flatten_up_to(shallow, structure, path=())


def filter(predicate, *structures, flatten=False):  # pylint: disable=redefined-builtin
    """Keeps only the leaves for which a predicate holds.

    Containers left empty by the filter are removed from their parent, except
    in namedtuples, whose fields are fixed: there a removed element becomes
    None. The outermost container is always returned, even when empty.

    Args:
      predicate: Callable taking one leaf from each structure and returning
        whether to keep it.
      *structures: Nested structures with identical tree shape. With several
        structures, the kept leaves are tuples of one leaf per structure.
      flatten: Whether to return the kept leaves as a flat tuple.

    Returns:
      The filtered structure, or a flat tuple of kept leaves.

    Raises:
      ValueError: If no structure is given or the structures differ in shape.
    """
    if not structures:
        raise ValueError('nested.filter() needs at least one structure.')
    if flatten:
        return tuple(leaves if len(leaves) > 1 else leaves[0]
                     for leaves in _aligned_leaves(structures) if predicate(*leaves))
    result = _filter(predicate, structures, path=())
    return () if result is _REMOVED else result


# Marks a leaf or an emptied container that the filter removed.
_REMOVED = object()


def _is_sequence(value):
    return isinstance(value, (tuple, list))


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(value, '_fields')


def _is_container(value):
    return isinstance(value, (tuple, list, dict))


def _rebuild(template, elements):
    """Builds a container of the template's type from an iterable or a dict.

    A dict is built in the template's key order, leaving out keys that
    `elements` lacks.
    """
    if isinstance(template, dict):
        return type(template)((key, elements[key]) for key in template if key in elements)
    if _is_namedtuple(template):
        return type(template)(*elements)
    return type(template)(elements)


def _children(structures, path):
    """Yields the key, path and aligned children of equally shaped containers.

    Dict keys come in sorted order, the order of `_flatten`.
    """
    first = structures[0]
    if all(_is_sequence(structure) for structure in structures):
        lengths = [len(structure) for structure in structures]
        if len(set(lengths)) > 1:
            raise ValueError(
                f'Nested structures differ at {_describe(path)}: sequences of lengths '
                f'{lengths}.')
        for index, children in enumerate(builtins.zip(*structures)):
            yield index, path + (index,), children
        return
    if all(isinstance(structure, dict) for structure in structures):
        keys = [set(structure.keys()) for structure in structures]
        for other in keys[1:]:
            if other != keys[0]:
                raise ValueError(
                    f'Nested structures differ at {_describe(path)}: dicts with keys '
                    f'{sorted(repr(key) for key in keys[0])} and '
                    f'{sorted(repr(key) for key in other)}.')
        for key in _sorted_keys(first):
            yield key, path + (key,), tuple(structure[key] for structure in structures)
        return
    kinds = [type(structure).__name__ for structure in structures]
    raise ValueError(
        f'Nested structures differ at {_describe(path)}: cannot align {", ".join(kinds)}.')


def _map(function, structures, path):
    if not any(_is_container(structure) for structure in structures):
        return function(*structures)
    children = _children(structures, path)
    if isinstance(structures[0], dict):
        elements = {key: _map(function, child, child_path)
                    for key, child_path, child in children}
    else:
        elements = [_map(function, child, child_path) for _, child_path, child in children]
    return _rebuild(structures[0], elements)


def _filter(predicate, structures, path):
    if not any(_is_container(structure) for structure in structures):
        keep = predicate(*structures)
        leaf = structures if len(structures) > 1 else structures[0]
        return leaf if keep else _REMOVED
    children = _children(structures, path)
    first = structures[0]
    if isinstance(first, dict):
        elements = {key: _filter(predicate, child, child_path)
                    for key, child_path, child in children}
        elements = {key: value for key, value in elements.items() if value is not _REMOVED}
        if not elements and path:
            return _REMOVED
        return _rebuild(first, elements)
    elements = [_filter(predicate, child, child_path) for _, child_path, child in children]
    if _is_namedtuple(first):
        return _rebuild(first, [None if element is _REMOVED else element
                                for element in elements])
    elements = [element for element in elements if element is not _REMOVED]
    if not elements and path:
        return _REMOVED
    return _rebuild(first, elements)


def _aligned_leaves(structures):
    """Checks that the structures match and returns tuples of aligned leaves."""
    _map(lambda *leaves: None, structures, path=())
    return builtins.zip(*(_flatten(structure) for structure in structures))


def _flatten_up_to(shallow, structure, path):
    if not _is_container(shallow):
        return (structure,)
    if isinstance(shallow, dict):
        if not isinstance(structure, dict) or set(structure) != set(shallow):
            got = (f'keys {sorted(structure, key=repr)}'
                   if isinstance(structure, dict) else type(structure).__name__)
            raise ValueError(
                f'Nested structures differ at {_describe(path)}: expected a dict with keys '
                f'{sorted(shallow, key=repr)}, got {got}.')
        return tuple(part for key in _sorted_keys(shallow)
                     for part in _flatten_up_to(shallow[key], structure[key], path + (key,)))
    if not _is_sequence(structure) or len(structure) != len(shallow):
        got = (f'length {len(structure)}' if _is_sequence(structure)
               else type(structure).__name__)
        raise ValueError(
            f'Nested structures differ at {_describe(path)}: expected a sequence of length '
            f'{len(shallow)}, got {got}.')
    return tuple(part for index, (inner, value) in enumerate(builtins.zip(shallow, structure))
                 for part in _flatten_up_to(inner, value, path + (index,)))


def _flatten(structure):
    if isinstance(structure, dict):
        return tuple(leaf for key in _sorted_keys(structure)
                     for leaf in _flatten(structure[key]))
    if _is_sequence(structure):
        return tuple(leaf for element in structure for leaf in _flatten(element))
    return (structure,)


def _sorted_keys(dictionary):
    try:
        return sorted(dictionary.keys())
    except TypeError as error:
        raise TypeError(
            f'Dict keys {list(dictionary)} cannot be sorted; nested structures, like tf.nest, '
            f'need keys of one comparable type.') from error


def _describe(path):
    if not path:
        return 'the top level'
    return 'path ' + ''.join(f'[{key!r}]' for key in path)
