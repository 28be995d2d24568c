"""Tests of the registry of callables a configuration may name."""

import functools

import pytest

from agents.tools import registry
from agents.tools.schema import ConfigError


def double(value):
    return 2 * value


def triple(value):
    return 3 * value


def _takes_one_argument(value):
    try:
        value(1)
    except TypeError:
        return False
    return True


@pytest.fixture
def functions():
    return registry.Registry(
        [registry.Role('function', _takes_one_argument, 'a function of one argument'),
         registry.Role('other', callable, 'callable')],
        hint='register yours')


def test_entries_are_found_by_name_object_or_import_path(functions):
    functions.register('function', double)
    entry = functions.find('function', 'double')
    assert entry.value is double and entry.role == 'function' and entry.keys is None
    assert functions.find('function', double) is entry
    assert functions.find('function', f'{__name__}:double') is entry
    assert functions.name_of(double) == 'double'
    assert functions.names('function') == ['double']


def test_unregistered_names_and_other_roles_find_nothing(functions):
    functions.register('function', double)
    assert functions.find('function', 'triple') is None
    assert functions.find('function', triple) is None
    assert functions.find('function', '') is None
    assert functions.find('other', 'double') is None
    assert functions.name_of(triple) is None
    message = functions.unknown('function', 'os:system')
    assert message == (
        "'os:system' is not a registered function (registered: double; register yours)")


def test_register_checks_the_role(functions):
    with pytest.raises(ConfigError, match="Cannot register 'print_' as function: .* is not a "
                                          'function of one argument'):
        functions.register('function', lambda: None, name='print_')
    with pytest.raises(ConfigError, match='Unknown registry role'):
        functions.register('optimizer', double)
    with pytest.raises(ConfigError, match='Pass a name'):
        functions.register('other', functools.partial(double, 1))


def test_a_name_cannot_be_taken_twice(functions):
    functions.register('function', double)
    functions.register('function', double)  # Registering again, as a reimported module does.
    with pytest.raises(ConfigError, match="'double' is registered"):
        functions.register('function', triple, name='double')


def test_register_returns_the_object_and_takes_aliases(functions):
    assert functions.register('function', triple, name='times3', aliases=['old.path:x']) is triple
    assert functions.find('function', 'old.path:x').value is triple
    assert functions.find('function', 'times3').value is triple
