"""Tests of finding config functions by name, without TensorFlow."""

import pytest

from agents.scripts import configs
from agents.scripts.cli import config_names
from agents.tools.schema import ConfigError


def test_unknown_config_names_the_shipped_tasks_in_one_line():
    with pytest.raises(ConfigError) as error:
        config_names.find('pendulm')
    assert str(error.value) == (
        "Unknown config 'pendulm' (did you mean 'pendulum'?). Choose one of: ant, cartpole, "
        'cartpole_novel, cheetah, hopper, humanoid, pendulum, pendulum_novel, popgym, '
        'popgym_feedforward, reacher, walker; '
        'or pass --config=module:function for a config function of your own.')
    with pytest.raises(ConfigError, match='Unknown config'):
        config_names.find('_mujoco')  # Private helpers are no configs.


def test_default_is_found_for_configs_of_your_own_but_not_offered():
    assert config_names.find('default') is configs.default
    assert 'default' not in config_names.shipped()
    assert 'pendulum' in config_names.shipped()


def test_config_functions_of_your_own_are_found_by_module_and_function():
    assert config_names.find('agents.scripts.configs:cartpole') is configs.cartpole
    with pytest.raises(ConfigError, match="Cannot import the module of config 'no_such_module"):
        config_names.find('no_such_module:config')
    with pytest.raises(ConfigError, match="Unknown config 'agents.scripts.configs:nothing'"):
        config_names.find('agents.scripts.configs:nothing')


def test_check_refuses_unknown_names_and_leaves_modules_of_your_own_unimported():
    with pytest.raises(ConfigError, match=r"^Unknown config 'nosuch'\. Choose one of: "):
        config_names.check('nosuch')
    config_names.check('pendulum')
    config_names.check('no_such_module:config')  # Imported when the config is made.

