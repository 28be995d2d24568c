"""Configuration schemas: every key's type, default, range and meaning, and their checks.

A schema is a dataclass whose fields are declared with `key`, one line per key;
the annotation is the key's type:

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class MyConfig:
        steps: int = schema.key(schema.REQUIRED, 'Environment steps to train on.', at_least=1)
        discount: float = schema.key(0.99, 'Discount factor of rewards.', above=0, at_most=1)
        optimizer: Callable = schema.key('adam', 'Optimizer class.', role='optimizer')

Supported types are `bool`, `int`, `float`, `str`, `tuple[X, ...]`, `tuple[X, Y]`,
`dict[X, Y]`, `Literal[...]` and unions with `None`. A key with a `role` names an
entry of a `registry.Registry`: its value is a registered name (or the
registered object itself) and is checked to be an entry of that role; nothing
else can put a callable into a configuration. A registry entry may declare a
schema of its own (an algorithm its hyperparameters, a network its layer
sizes), whose keys join the configuration when the entry is chosen.

`check(schema, values, registry)` validates a dict of values and returns them
converted (lists to tuples, whole floats to ints, names to registered objects)
with the defaults filled in. A schema's `__post_init__` may check relations
between its keys, raising `ConfigError`.
"""

import collections.abc
import dataclasses
import difflib
import numbers
import types
import typing

# Default of a key that every configuration must set.
REQUIRED = dataclasses.MISSING

# Bounds a key's numbers (each number, for tuples) must respect, and how to say them.
_BOUNDS = {
    'at_least': ('>=', lambda value, bound: value >= bound),
    'above': ('>', lambda value, bound: value > bound),
    'at_most': ('<=', lambda value, bound: value <= bound),
    'below': ('<', lambda value, bound: value < bound),
}


class ConfigError(ValueError):
    """A configuration that cannot be found, loaded, or used."""


def key(default, doc, *, role=None, **bounds):
    """Declare a configuration key as a dataclass field.

    Args:
      default: Value when the configuration does not set the key; `REQUIRED` if
        it must. Lists and dicts are copied for each configuration.
      doc: One line saying what the key means.
      role: Registry role whose entries the key names, such as 'optimizer'.
      **bounds: Bounds on the key's numbers: `at_least`, `above`, `at_most`,
        `below`.

    Returns:
      A `dataclasses.field`.
    """
    unknown = set(bounds) - set(_BOUNDS)
    if unknown:
        raise TypeError(f'Unknown bounds {sorted(unknown)}; use {sorted(_BOUNDS)}.')
    metadata = dict(doc=doc, role=role, bounds=bounds)
    if isinstance(default, (list, dict, set)):
        return dataclasses.field(
            default_factory=lambda: type(default)(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def check(schema, values, registry, source='config'):
    """Validate configuration values against a schema and the schemas of chosen entries.

    Args:
      schema: Dataclass declaring the keys with `key`.
      values: Mapping from key to value, as written by the user.
      registry: `registry.Registry` that resolves the keys with a role.
      source: Where the values come from, such as a file, for the error message.

    Raises:
      ConfigError: Naming every key that is unknown (with the nearest known key),
        missing, of the wrong type or out of range, in one line.

    Returns:
      Dict of every key of the involved schemas to its converted value.
    """
    schemas, declared, checked, errors = [schema], set(), {}, []
    for current in schemas:  # Grows while chosen registry entries add their schemas.
        for field in dataclasses.fields(current):
            if field.name in declared:
                raise TypeError(f'Config key {field.name!r} is declared twice, in {current}.')
            declared.add(field.name)
            try:
                value, entry = _check_field(field, current, values, registry)
            except ConfigError as error:
                errors.append(str(error))
                continue
            checked[field.name] = value
            if entry and entry.keys and entry.keys not in schemas:
                schemas.append(entry.keys)
    failed_roles = any(_role(field) and field.name not in checked
                       for each in schemas for field in dataclasses.fields(each))
    if not failed_roles:  # Keys of an unknown entry's schema would all look unknown.
        errors += [_unknown_key(name, declared) for name in values if name not in declared]
    if not errors:
        errors += _relations(schemas, checked)
    if errors:
        raise ConfigError(f'Invalid {source}: ' + '; '.join(errors) + '.')
    return checked


def key_types(schema, values, registry):
    """The type of every key that a configuration of these values has.

    Args:
      schema: Dataclass declaring the keys with `key`.
      values: Mapping from key to value; the keys with a role choose the
        registry entries whose schemas join.
      registry: `registry.Registry` that resolves the keys with a role.

    Returns:
      Dict of every key of `schema` and of the chosen entries' schemas to its
      type annotation.
    """
    schemas, types_ = [schema], {}
    for current in schemas:  # Grows while chosen registry entries add their schemas.
        hints = typing.get_type_hints(current)
        for field in dataclasses.fields(current):
            types_[field.name] = hints[field.name]
            if _role(field):
                value = values[field.name] if field.name in values else _default(field)
                entry = registry.find(_role(field), value)
                if entry and entry.keys and entry.keys not in schemas:
                    schemas.append(entry.keys)
    return types_


def admits(annotation, kind):
    """Whether the type `annotation` includes the plain type `kind`."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return kind in typing.get_args(annotation)
    return annotation is kind


def markdown_table(schema):
    """A Markdown table of a schema's keys: type, default, range and meaning."""
    hints = typing.get_type_hints(schema)
    rows = ['| key | type | default | range | meaning |', '|---|---|---|---|---|']
    for field in dataclasses.fields(schema):
        role = _role(field)
        kind = describe_type(hints[field.name])
        if role:
            kind = f'str or {role} name' if admits(hints[field.name], str) else f'{role} name'
        default = 'required' if _is_required(field) else f'`{_default(field)!r}`'
        rows.append(
            f'| `{field.name}` | {kind} | {default} | {_describe_bounds(field)} | '
            f'{field.metadata["doc"]} |')
    return '\n'.join(rows)


def describe_type(annotation):
    """A short readable name of a key's type, such as 'tuple of int or None'."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return ' or '.join(describe_type(arg) for arg in args)
    if origin is typing.Literal:
        return ' or '.join(repr(arg) for arg in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f'tuple of {describe_type(args[0])}'
        return '(' + ', '.join(describe_type(arg) for arg in args) + ')'
    if origin is dict:
        return f'dict of {describe_type(args[0])} to {describe_type(args[1])}'
    if annotation is type(None):
        return 'None'
    return getattr(annotation, '__name__', str(annotation))


class _Mismatch(Exception):
    """A value that does not have the type of a key."""


def _check_field(field, schema, values, registry):
    """The checked value of one key and the registry entry it names, if any."""
    if field.name in values:
        value = values[field.name]
    elif _is_required(field):
        raise ConfigError(f'missing key {field.name!r} ({field.metadata["doc"].rstrip(".")})')
    else:
        value = _default(field)
    annotation = typing.get_type_hints(schema)[field.name]
    role = _role(field)
    if role:
        found = registry.find(role, value)
        if found is not None:
            return found.value, found
        if not (isinstance(value, str) and admits(annotation, str)):
            raise ConfigError(f'{field.name}: {registry.unknown(role, value)}')
    try:
        value = _convert(value, annotation)
    except _Mismatch:
        raise ConfigError(
            f'{field.name} must be {describe_type(annotation)}, got {_short_repr(value)}'
        ) from None
    _check_bounds(field, value)
    return value, None


def _convert(value, annotation):
    """`value` converted to the type `annotation`; raises _Mismatch if it has another type."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if type(value) in args:
            # A value of a type the union names keeps it: 2.0 stays a float in `int | float`.
            return value
        for arg in args:
            try:
                return _convert(value, arg)
            except _Mismatch:
                pass
        raise _Mismatch()
    if origin is typing.Literal:
        if any(type(value) is type(arg) and value == arg for arg in args):
            return value
        raise _Mismatch()
    if origin is tuple:
        return _convert_tuple(value, args)
    if origin is dict:
        if not isinstance(value, collections.abc.Mapping):
            raise _Mismatch()
        return {_convert(name, args[0]): _convert(item, args[1]) for name, item in value.items()}
    return _convert_scalar(value, annotation)


def _convert_tuple(value, args):
    if isinstance(value, (str, bytes)) or not isinstance(value, collections.abc.Sequence):
        raise _Mismatch()
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_convert(item, args[0]) for item in value)
    if len(value) != len(args):
        raise _Mismatch()
    return tuple(_convert(item, arg) for item, arg in zip(value, args))


def _convert_scalar(value, annotation):
    if annotation is type(None) and value is None:
        return None
    if annotation is bool and isinstance(value, bool):
        return value
    if annotation is str and isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _Mismatch()
    if annotation is float:
        return float(value)
    if annotation is int and float(value).is_integer():
        # Whole floats such as 1e6 are accepted where integers are expected.
        return int(value)
    raise _Mismatch()



def _check_bounds(field, value):
    numbers_ = value if isinstance(value, tuple) else (value,)
    for name, bound in field.metadata['bounds'].items():
        symbol, holds = _BOUNDS[name]
        for number in numbers_:
            if isinstance(number, numbers.Real) and not holds(number, bound):
                raise ConfigError(
                    f'{field.name} must be {symbol} {bound}, got {_short_repr(value)}')


def _relations(schemas, checked):
    """Errors of the schemas' own checks of relations between their keys."""
    errors = []
    for schema in schemas:
        names = [field.name for field in dataclasses.fields(schema)]
        try:
            schema(**{name: checked[name] for name in names})
        except ConfigError as error:
            errors.append(str(error))
    return errors


def _unknown_key(name, known):
    nearest = difflib.get_close_matches(str(name), list(known), n=1)
    hint = f' (did you mean {nearest[0]!r}?)' if nearest else ''
    return f'unknown key {name!r}{hint}'


def _describe_bounds(field):
    return ' and '.join(
        f'{_BOUNDS[name][0]} {bound}' for name, bound in field.metadata['bounds'].items())


def _role(field):
    return field.metadata.get('role')


def _is_required(field):
    return field.default is REQUIRED and field.default_factory is dataclasses.MISSING


def _default(field):
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def _short_repr(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'
