"""Tests for the locked attribute dictionary."""

import copy
import pickle

import pytest

from agents.tools.attr_dict import AttrDict


def test_attribute_and_item_access():
    config = AttrDict(a=1, b={'c': 2})
    assert config.a == 1
    assert config['b'] == {'c': 2}
    assert isinstance(config, dict)


def test_missing_key_raises_attribute_error_naming_key():
    config = AttrDict(alpha=1)
    with pytest.raises(AttributeError, match=r"no key 'beta'; known keys: 'alpha'"):
        config.beta  # pylint: disable=pointless-statement
    assert not hasattr(config, 'beta')
    with pytest.raises(KeyError):
        config['beta']  # pylint: disable=pointless-statement


@pytest.mark.parametrize('change', [
    lambda config: setattr(config, 'a', 2),
    lambda config: setattr(config, 'new', 2),
    lambda config: config.__setitem__('a', 2),
    lambda config: delattr(config, 'a'),
    lambda config: config.__delitem__('a'),
    lambda config: config.update(a=2),
    lambda config: config.setdefault('new', 2),
    lambda config: config.pop('a'),
    lambda config: config.popitem(),
    lambda config: config.clear(),
    lambda config: config.__ior__({'a': 2}),
])
def test_locked_after_construction(change):
    config = AttrDict(a=1)
    with pytest.raises(RuntimeError, match='locked.*unlocked'):
        change(config)
    assert config == {'a': 1}


def test_setdefault_of_existing_key_is_allowed_while_locked():
    config = AttrDict(a=1)
    assert config.setdefault('a', 5) == 1


def test_unlocked_allows_changes_and_relocks():
    config = AttrDict(a=1)
    with config.unlocked():
        config.a = 2
        config.b = 3
        config['c'] = 4
        del config.c
    assert config == {'a': 2, 'b': 3}
    with pytest.raises(RuntimeError):
        config.a = 5


def test_unlocked_relocks_after_error_and_nests():
    config = AttrDict()
    with pytest.raises(ValueError):
        with config.unlocked():
            raise ValueError('boom')
    with pytest.raises(RuntimeError):
        config.a = 1
    with config.unlocked():
        with config.unlocked():
            config.a = 1
        config.b = 2  # Still unlocked after the inner context.
    assert config == {'a': 1, 'b': 2}


def test_lock_is_shallow():
    inner = AttrDict(x=1)
    config = AttrDict(inner=inner)
    with config.unlocked():
        with pytest.raises(RuntimeError):
            config.inner.x = 2


def test_copy_with_updates_is_locked_and_independent():
    config = AttrDict(a=1, b=2)
    changed = config.copy(b=3, c=4)
    assert isinstance(changed, AttrDict)
    assert changed == {'a': 1, 'b': 3, 'c': 4}
    assert config == {'a': 1, 'b': 2}
    with pytest.raises(RuntimeError):
        changed.a = 0


def test_copy_of_unlocked_is_locked():
    config = AttrDict(a=1)
    with config.unlocked():
        duplicate = config.copy()
    with pytest.raises(RuntimeError):
        duplicate.a = 2


def test_pickle_and_deepcopy_round_trip():
    config = AttrDict(a=1, nested=AttrDict(b=[1, 2]))
    for restored in (pickle.loads(pickle.dumps(config)), copy.deepcopy(config)):
        assert restored == config
        assert isinstance(restored.nested, AttrDict)
        assert restored.nested.b == [1, 2]
        with pytest.raises(RuntimeError):
            restored.a = 2
    assert copy.deepcopy(config).nested.b is not config.nested.b


def test_repr_names_the_type():
    assert repr(AttrDict(a=1)) == "AttrDict({'a': 1})"
