"""Tests for map, zip, flatten and filter over nested structures."""

import collections
import subprocess
import sys

import pytest

from agents.tools import nested

Point = collections.namedtuple('Point', 'x, y')


class OrderedDictSubclass(collections.OrderedDict):
    pass


def test_map_single_structure_keeps_types():
    structure = {'a': (1, [2, 3]), 'b': Point(4, 5)}
    result = nested.map(lambda leaf: leaf * 10, structure)
    assert result == {'a': (10, [20, 30]), 'b': Point(40, 50)}
    assert isinstance(result['a'], tuple)
    assert isinstance(result['a'][1], list)
    assert isinstance(result['b'], Point)


def test_map_several_structures():
    result = nested.map(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)])
    assert result == [11, (22, 33)]


def test_map_keeps_dict_subclass():
    structure = OrderedDictSubclass(b=1, a=2)
    result = nested.map(lambda leaf: -leaf, structure)
    assert type(result) is OrderedDictSubclass
    assert list(result.keys()) == ['b', 'a']


def test_map_leaf_only():
    assert nested.map(lambda x, y: x * y, 3, 4) == 12


def test_map_treats_strings_and_none_as_leaves():
    assert nested.map(lambda leaf: repr(leaf), ('ab', None)) == ("'ab'", 'None')


def test_map_flatten_sorts_dict_keys():
    result = nested.map(lambda leaf: leaf + 1, {'b': 1, 'a': (2, 3)}, flatten=True)
    assert result == (3, 4, 2)


def test_map_mismatched_lengths_names_the_path():
    with pytest.raises(ValueError, match=r"path \['a'\].*lengths \[2, 3\]"):
        nested.map(lambda x, y: x, {'a': (1, 2)}, {'a': (1, 2, 3)})


def test_map_mismatched_keys():
    with pytest.raises(ValueError, match='dicts with keys'):
        nested.map(lambda x, y: x, {'a': 1}, {'b': 1})


def test_map_container_against_leaf():
    with pytest.raises(ValueError, match=r'path \[1\].*cannot align tuple, int'):
        nested.map(lambda x, y: x, [1, (2, 3)], [1, 2])


def test_map_needs_a_structure():
    with pytest.raises(ValueError, match='at least one structure'):
        nested.map(lambda: None)


def test_zip_pairs_leaves():
    result = nested.zip({'a': [1, 2]}, {'a': [3, 4]})
    assert result == {'a': [(1, 3), (2, 4)]}


def test_zip_single_structure_is_identity_copy():
    structure = (1, [2])
    result = nested.zip(structure)
    assert result == structure
    assert result[1] is not structure[1]


def test_zip_flatten():
    assert nested.zip((1, 2), (3, 4), flatten=True) == ((1, 3), (2, 4))


def test_flatten_order():
    structure = {'b': [1, (2, 3)], 'a': Point(x=4, y={'d': 5, 'c': 6})}
    assert nested.flatten(structure) == (4, 6, 5, 1, 2, 3)


def test_flatten_leaf_and_empty():
    assert nested.flatten(7) == (7,)
    assert nested.flatten(((), [], {})) == ()


def test_flatten_unsortable_keys():
    with pytest.raises(TypeError, match='cannot be sorted'):
        nested.flatten({1: 'a', 'b': 2})


def test_filter_removes_leaves_and_empty_containers():
    structure = {'a': [1, 2, 3], 'b': (2, [4]), 'c': {'d': 1}}
    result = nested.filter(lambda leaf: leaf % 2 == 0, structure)
    assert result == {'a': [2], 'b': (2, [4])}


def test_filter_namedtuple_keeps_fields_as_none():
    result = nested.filter(lambda leaf: leaf > 1, Point(1, (2, 0)))
    assert result == Point(None, (2,))
    assert isinstance(result, Point)


def test_filter_several_structures_keeps_tuples():
    result = nested.filter(lambda x, y: x < y, [1, 5, 2], [3, 4, 6])
    assert result == [(1, 3), (2, 6)]
    result = nested.filter(lambda x, y: x < y, [1, 5, 2], [3, 4, 6], flatten=True)
    assert result == ((1, 3), (2, 6))


def test_filter_flatten():
    result = nested.filter(lambda leaf: leaf is not None, {'b': None, 'a': (1, None, 2)},
                           flatten=True)
    assert result == (1, 2)


def test_filter_top_level_stays_when_empty():
    assert nested.filter(lambda leaf: False, [1, [2]]) == []
    assert nested.filter(lambda leaf: False, 3) == ()


def test_import_does_not_load_tensorflow():
    code = 'import sys, agents.tools.nested; print("tensorflow" in sys.modules)'
    output = subprocess.run([sys.executable, '-c', code], check=True, capture_output=True,
                            text=True).stdout
    assert output.strip() == 'False'


def test_map_flatten_keeps_structured_results():
    result = nested.map(lambda leaf: (leaf, leaf), {'b': 1, 'a': 2}, flatten=True)
    assert result == ((2, 2), (1, 1))


def test_flatten_options_still_check_structure():
    with pytest.raises(ValueError, match='lengths'):
        nested.zip((1, 2), (3,), flatten=True)
    with pytest.raises(ValueError, match='lengths'):
        nested.filter(lambda x, y: True, (1, 2), (3,), flatten=True)


def test_map_visits_leaves_in_flatten_order_and_keeps_key_order():
    # A structure rebuilt from its flat leaves must put each leaf under its own key.
    structure = collections.OrderedDict(
        [('observation', [1, 2]), ('desired_goal', 3), ('achieved_goal', {'z': 4, 'y': 5})])
    visited = []
    result = nested.map(lambda leaf: visited.append(leaf) or -leaf, structure)
    assert tuple(visited) == nested.flatten(structure) == (5, 4, 3, 1, 2)
    assert list(result) == ['observation', 'desired_goal', 'achieved_goal']
    assert list(result['achieved_goal']) == ['z', 'y']
    leaves = iter(nested.flatten(structure))
    assert nested.map(lambda _: next(leaves), structure) == structure


def test_filter_visits_leaves_in_flatten_order_and_keeps_key_order():
    visited = []
    result = nested.filter(
        lambda leaf: visited.append(leaf) or leaf != 2, {'c': 1, 'b': 2, 'a': 3})
    assert visited == [3, 2, 1]
    assert list(result.items()) == [('c', 1), ('a', 3)]


def test_map_over_several_dicts_follows_the_first_ones_key_order():
    result = nested.map(lambda x, y: (x, y), {'b': 1, 'a': 2}, {'a': 20, 'b': 10})
    assert list(result.items()) == [('b', (1, 10)), ('a', (2, 20))]


def test_flatten_up_to_stops_at_the_leaves_of_the_shallow_structure():
    shallow = collections.OrderedDict([('b', 'box'), ('a', ('x', 'y'))])
    value = {'a': ([0.0], {'free': 1}), 'b': [1.0, 2.0]}
    assert nested.flatten_up_to(shallow, value) == ([0.0], {'free': 1}, [1.0, 2.0])
    assert nested.flatten_up_to('leaf', [1, 2]) == ([1, 2],)


def test_flatten_up_to_names_where_the_structures_differ():
    with pytest.raises(ValueError, match=r"path \['a'\]: expected a sequence of length 2"):
        nested.flatten_up_to({'a': (1, 2)}, {'a': (1,)})
    with pytest.raises(ValueError, match=r"top level: expected a dict with keys \['a'\], got "):
        nested.flatten_up_to({'a': 1}, [1])
