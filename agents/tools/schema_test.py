"""Tests of configuration schemas: types, defaults, ranges, unknown keys and registry roles."""

from collections.abc import Callable
import dataclasses
from typing import Literal

import numpy as np
import pytest

from agents.tools import registry
from agents.tools import schema
from agents.tools.schema import key


def make_widget():
    return 'widget'


def make_gadget():
    return 'gadget'


@dataclasses.dataclass(frozen=True, kw_only=True)
class GadgetConfig:
    gadget_size: int = key(3, 'Size of the gadget.', at_least=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyConfig:
    steps: int = key(schema.REQUIRED, 'Steps to run.', at_least=1)
    rate: float = key(0.5, 'A rate.', above=0, at_most=1)
    layers: tuple[int, ...] = key((4, 2), 'Layer sizes.', at_least=1)
    bounds: tuple[float, float] | None = key(None, 'Low and high.')
    mode: Literal['fast', 'slow'] = key('fast', 'How to run.')
    flag: bool = key(True, 'A switch.')
    groups: dict[str, str] = key(dict(all='.*'), 'Named patterns.')
    options: dict[str, int | float] = key({}, 'Arguments of something.')
    maker: Callable = key('make_widget', 'What to make.', role='maker')
    source: str = key('here', 'A name or a registered maker.', role='maker')

    def __post_init__(self):
        if self.bounds is not None and self.bounds[0] >= self.bounds[1]:
            raise schema.ConfigError('bounds must be (low, high) with low < high')


@pytest.fixture
def makers():
    makers = registry.Registry([registry.Role('maker', callable, 'a callable')])
    makers.register('maker', make_widget)
    makers.register('maker', make_gadget, keys=GadgetConfig)
    return makers


def test_defaults_are_filled_in_and_values_converted(makers):
    values = schema.check(
        ToyConfig, dict(steps=1e6, rate=1, layers=[8, np.int64(4)], bounds=[-1, 1]), makers)
    assert values['steps'] == 1000000 and type(values['steps']) is int
    assert values['rate'] == 1.0 and type(values['rate']) is float
    assert values['layers'] == (8, 4) and type(values['layers'][1]) is int
    assert values['bounds'] == (-1.0, 1.0)
    assert values['mode'] == 'fast' and values['flag'] is True
    assert values['maker'] is make_widget and values['source'] == 'here'


def test_a_union_keeps_a_value_of_a_type_it_names(makers):
    values = schema.check(ToyConfig, dict(steps=1, options=dict(a=2.0, b=2)), makers)
    assert [type(value) for value in values['options'].values()] == [float, int]


def test_mutable_defaults_are_fresh_copies(makers):
    first = schema.check(ToyConfig, dict(steps=1), makers)
    first['groups']['new'] = 'x'
    assert schema.check(ToyConfig, dict(steps=1), makers)['groups'] == dict(all='.*')


@pytest.mark.parametrize('values, message', [
    (dict(steps=-1000), 'steps must be >= 1, got -1000'),
    (dict(steps=0), 'steps must be >= 1, got 0'),
    (dict(steps=2.5), 'steps must be int, got 2.5'),
    (dict(steps='10'), "steps must be int, got '10'"),
    (dict(steps=1, rate=0), 'rate must be > 0, got 0.0'),
    (dict(steps=1, rate=True), 'rate must be float, got True'),
    (dict(steps=1, layers=[4, 0]), 'layers must be >= 1, got (4, 0)'),
    (dict(steps=1, layers='44'), "layers must be tuple of int, got '44'"),
    (dict(steps=1, bounds=[1]), 'bounds must be (float, float) or None, got [1]'),
    (dict(steps=1, mode='medium'), "mode must be 'fast' or 'slow', got 'medium'"),
    (dict(steps=1, flag=1), 'flag must be bool, got 1'),
    (dict(steps=1, groups=['all']), "groups must be dict of str to str, got ['all']"),
    (dict(), "missing key 'steps' (Steps to run)"),
    (dict(steps=1, stpes=2), "unknown key 'stpes' (did you mean 'steps'?)"),
    (dict(steps=1, zzz=2), "unknown key 'zzz'."),
    (dict(steps=1, bounds=(1, -1)), 'bounds must be (low, high) with low < high'),
])
def test_invalid_values_name_the_key_and_the_value(makers, values, message):
    with pytest.raises(schema.ConfigError, match='^Invalid config: ') as error:
        schema.check(ToyConfig, values, makers)
    assert message in str(error.value)
    assert '\n' not in str(error.value)


def test_every_error_is_reported_at_once(makers):
    with pytest.raises(schema.ConfigError) as error:
        schema.check(ToyConfig, dict(steps=-1, rate=2, mode='x'), makers, 'run.yaml')
    assert str(error.value).startswith('Invalid run.yaml: steps must be >= 1')
    assert 'rate must be <= 1' in str(error.value) and 'mode must be' in str(error.value)


def test_role_keys_take_only_registered_names_or_objects(makers):
    assert schema.check(ToyConfig, dict(steps=1, maker=make_widget), makers)['maker'] is (
        make_widget)
    for value in ('os:system', print, 'make_widgets'):
        with pytest.raises(schema.ConfigError, match='maker: .* is not a registered maker'):
            schema.check(ToyConfig, dict(steps=1, maker=value), makers)
    # A key that also takes strings keeps an unregistered string, never a callable.
    with pytest.raises(schema.ConfigError, match='source: .* is not a registered maker'):
        schema.check(ToyConfig, dict(steps=1, source=print), makers)
    assert schema.check(ToyConfig, dict(steps=1, source='make_widget'), makers)['source'] is (
        make_widget)


def test_a_chosen_entry_adds_the_keys_of_its_schema(makers):
    with pytest.raises(schema.ConfigError, match="unknown key 'gadget_size'"):
        schema.check(ToyConfig, dict(steps=1, gadget_size=5), makers)
    values = schema.check(ToyConfig, dict(steps=1, maker='make_gadget', gadget_size=5), makers)
    assert values['gadget_size'] == 5
    assert schema.check(ToyConfig, dict(steps=1, maker='make_gadget'), makers)[
        'gadget_size'] == 3
    with pytest.raises(schema.ConfigError, match='gadget_size must be >= 1'):
        schema.check(ToyConfig, dict(steps=1, maker='make_gadget', gadget_size=0), makers)


def test_an_unknown_entry_does_not_report_its_keys_as_unknown(makers):
    with pytest.raises(schema.ConfigError) as error:
        schema.check(ToyConfig, dict(steps=1, maker='nothing', gadget_size=5), makers)
    assert 'unknown key' not in str(error.value)


def test_markdown_table_lists_every_key():
    table = schema.markdown_table(ToyConfig)
    lines = table.splitlines()
    assert lines[0] == '| key | type | default | range | meaning |'
    assert len(lines) == 2 + len(dataclasses.fields(ToyConfig))
    assert '| `steps` | int | required | >= 1 | Steps to run. |' in lines
    assert '| `rate` | float | `0.5` | > 0 and <= 1 | A rate. |' in lines
    assert "| `maker` | maker name | `'make_widget'` |  | What to make. |" in lines
    assert "| `source` | str or maker name | `'here'` |  | A name or a registered maker. |" in (
        lines)


def test_unknown_bounds_are_a_programming_error():
    with pytest.raises(TypeError, match='minimum'):
        key(1, 'A key.', minimum=0)


def test_key_types_include_the_keys_of_the_chosen_entries(makers):
    types = schema.key_types(ToyConfig, dict(steps=10), makers)
    assert types['rate'] is float and types['layers'] == tuple[int, ...]
    assert 'gadget_size' not in types  # The default maker declares no keys.
    types = schema.key_types(ToyConfig, dict(steps=10, maker='make_gadget'), makers)
    assert types['gadget_size'] is int
    assert schema.admits(types['bounds'], type(None)) and not schema.admits(types['rate'], int)
