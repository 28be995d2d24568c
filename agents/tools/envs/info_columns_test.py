"""Tests for agents.tools.envs.info_columns."""

import numpy as np
import pytest

from agents.tools.envs import info_columns

# One value of every type a column holds, with the edge values of each.
_EDGE_INFOS = [
    {'f64': np.float64(-0.0), 'f32': np.float32(np.nan), 'f16': np.float16(-np.inf),
     'i64': np.int64(np.iinfo(np.int64).min), 'u64': np.uint64(np.iinfo(np.uint64).max),
     'i8': np.int8(-128), 'b': np.bool_(True), 'float': 0.1, 'int': 2 ** 63 - 1, 'bool': False},
    {'f64': np.float64(1e308), 'f32': np.float32(-1.5), 'f16': np.float16(0.099),
     'i64': np.int64(7), 'u64': np.uint64(0), 'i8': np.int8(127), 'b': np.bool_(False),
     'float': -np.inf, 'int': -(2 ** 63), 'bool': True},
]


def _assert_exact(actual, expected):
    assert list(actual) == list(expected)
    for key, value in expected.items():
        assert type(actual[key]) is type(value), key
        assert np.array_equal(actual[key], value, equal_nan=True), key
        assert np.signbit(actual[key]) == np.signbit(value), key


def test_schema_is_the_keys_and_scalar_types_all_infos_share():
    infos = [{'x': np.float64(1.0), 'n': 3}, {'x': np.float64(2.0), 'n': 4}]
    assert info_columns.schema_of(infos) == (('x', np.float64), ('n', int))
    assert info_columns.schema_of([]) is None
    assert info_columns.schema_of([{}, {}]) is None
    # Other keys, another order or another type of value: no shared schema.
    assert info_columns.schema_of(infos + [{'x': np.float64(1.0)}]) is None
    assert info_columns.schema_of(infos + [{'n': 3, 'x': np.float64(1.0)}]) is None
    assert info_columns.schema_of(infos + [{'x': 1.0, 'n': 3}]) is None
    # Values that are not scalars have no column.
    assert info_columns.schema_of([{'x': np.zeros(2)}]) is None
    assert info_columns.schema_of([{'x': 'text'}]) is None
    assert info_columns.schema_of([{'x': {'nested': 1}}]) is None


def test_values_come_back_exactly_with_their_types_in_another_attachment():
    schema = info_columns.schema_of(_EDGE_INFOS)
    columns = info_columns.InfoColumns(schema, size=5)
    # A worker attaches by name and writes; the parent reads what it wrote.
    attached = info_columns.InfoColumns(schema, 5, name=columns.name)
    try:
        assert attached.write(slice(1, 3), _EDGE_INFOS)
        for actual, expected in zip(columns.read(slice(1, 3)), _EDGE_INFOS):
            _assert_exact(actual, expected)
        assert attached.write([4, 0], _EDGE_INFOS)
        for actual, expected in zip(columns.read([4, 0]), _EDGE_INFOS):
            _assert_exact(actual, expected)
    finally:
        attached.close()
        columns.close()


@pytest.mark.parametrize('info', [
    {'x': np.float64(1.0)},  # A key missing.
    {'n': 1, 'x': np.float64(1.0)},  # Another order.
    {'x': np.float32(1.0), 'n': 1},  # Another type.
    {'x': np.float64(1.0), 'n': 2 ** 64},  # An int beyond int64.
])
def test_an_info_off_the_schema_is_not_written(info):
    columns = info_columns.InfoColumns((('x', np.float64), ('n', int)), size=2)
    try:
        assert not columns.write(slice(0, 2), [{'x': np.float64(2.0), 'n': 1}, info])
    finally:
        columns.close()
