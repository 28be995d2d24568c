"""Tests of the registry of algorithms, networks, optimizers and environment constructors."""

import dataclasses
import sys

import gymnasium as gym
import pytest
import tensorflow as tf

from agents.parts import networks
from agents.scripts import config_schema
from agents.scripts import configs
from agents.scripts import registry
from agents.tools.schema import ConfigError
from agents.tools.schema import key


def test_built_in_entries():
    assert 'ppo' in registry.REGISTRY.names('algorithm')
    assert {'feed_forward_categorical', 'feed_forward_gaussian', 'recurrent_gaussian'} <= set(
        registry.REGISTRY.names('network'))
    assert registry.REGISTRY.find('optimizer', 'adam').value is tf.compat.v1.train.AdamOptimizer
    assert 'rmsprop' in registry.REGISTRY.names('optimizer')


@pytest.mark.parametrize('role, value', [
    ('optimizer', tf.io.gfile.rmtree),
    ('optimizer', tf.io.write_file),
    ('optimizer', dict),
    ('network', tf.py_function),
    ('network', networks.NetworkConfig),
    ('algorithm', tf.compat.v1.train.AdamOptimizer),
    ('algorithm', tf.io.gfile.remove),
    ('env', tf.io.gfile.rmtree),
    ('env', 'Pendulum-v1'),
])
def test_objects_that_do_not_fit_their_role_cannot_be_registered(role, value):
    with pytest.raises(ConfigError, match=f'Cannot register .* as {role}'):
        registry.register(role, value, name='not_allowed')
    assert 'not_allowed' not in registry.REGISTRY.names(role)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _WidthConfig(networks.NetworkConfig):
    width: int = key(8, 'Units per layer.', at_least=1)


@registry.register('network', keys=_WidthConfig)
def wide_network(config, action_space, observations, length, state=None):
    return networks.feed_forward_gaussian(config, action_space, observations, length, state)


@registry.register('env', name='test_pendulum')
def _pendulum():
    return gym.make('Pendulum-v1')


def test_user_entries_and_their_keys_join_configs():
    registry.register('optimizer', tf.compat.v1.train.ProximalAdagradOptimizer, name='test_pa')
    registry.register('optimizer', tf.compat.v1.train.ProximalAdagradOptimizer, name='test_pa')
    values = configs.pendulum()
    values.update(network='wide_network', env='test_pendulum', optimizer='test_pa', width=4)
    config = config_schema.make(values)
    assert config.network is wide_network and config.width == 4
    assert config.env is _pendulum
    assert config.optimizer is tf.compat.v1.train.ProximalAdagradOptimizer


def test_register_flag_imports_modules_and_reports_missing_ones(tmp_path, monkeypatch):
    (tmp_path / 'my_test_agents.py').write_text(
        'from agents.scripts import registry\n'
        'import tensorflow as tf\n'
        "registry.register('optimizer', tf.compat.v1.train.FtrlOptimizer, name='test_ftrl')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.import_modules(['my_test_agents'])
    assert 'test_ftrl' in registry.REGISTRY.names('optimizer')
    sys.modules.pop('my_test_agents')
    with pytest.raises(ConfigError, match='Cannot import --register=no_such_module_here'):
        registry.import_modules(['no_such_module_here'])
