"""Tests for saving and loading configurations and creating environments."""

import os

import numpy as np
import pytest

from agents.scripts import configs
from agents.scripts import environments
from agents.scripts import networks
from agents.scripts import utility


def test_saved_config_loads_with_the_same_values_and_callables(tmp_path):
    config = utility.make_config('pendulum')
    utility.save_config(config, str(tmp_path))
    loaded = utility.load_config(str(tmp_path))
    assert loaded.network is networks.feed_forward_gaussian
    assert loaded.algorithm is config.algorithm
    assert loaded.optimizer is config.optimizer
    assert loaded.env == 'Pendulum-v1' and loaded.max_length == 200
    assert list(loaded.policy_layers) == [64, 64]
    assert loaded.weight_summaries == config.weight_summaries


def test_config_naming_a_callable_outside_allowed_modules_is_refused(tmp_path):
    (tmp_path / 'config.yaml').write_text('env: Pendulum-v1\nnetwork: !callable os:system\n')
    with pytest.raises(utility.ConfigError, match='outside the allowed modules'):
        utility.load_config(str(tmp_path))
    # Allowing the module explicitly is the user's decision.
    assert utility.load_config(str(tmp_path), allowed_modules=['os']).network is os.system


def test_missing_or_broken_config_gives_clear_errors(tmp_path):
    with pytest.raises(utility.ConfigError, match='No config.yaml'):
        utility.load_config(str(tmp_path))
    (tmp_path / 'config.yaml').write_text('env: [unclosed\n')
    with pytest.raises(utility.ConfigError, match='Cannot parse'):
        utility.load_config(str(tmp_path))


def test_unknown_config_names_the_available_ones():
    with pytest.raises(utility.ConfigError, match='pendulum'):
        utility.make_config('pendulm')
    with pytest.raises(utility.ConfigError, match='Cannot import'):
        utility.make_config('no_such_module:config')


def test_config_function_from_a_user_module():
    config = utility.make_config('agents.scripts.configs:cartpole')
    assert config.env == 'CartPole-v1'


def test_every_config_names_an_environment_and_a_budget():
    for name in ('pendulum', 'cartpole', 'reacher', 'cheetah', 'walker', 'hopper', 'ant',
                 'humanoid'):
        config = getattr(configs, name)()
        assert config['env'].endswith(('-v1', '-v5')) and config['steps'] > 0
        assert config['max_length'] > 0


def test_make_environment_wraps_with_normalized_ranges_and_seeds():
    env = environments.make_environment('Pendulum-v1', 50, True, seed=3)
    other = environments.make_environment('Pendulum-v1', 50, True, seed=3)
    np.testing.assert_allclose(env.reset()[0], other.reset()[0])
    assert env.observation_space.dtype == np.float32
    for _ in range(50):
        # Actions are clipped to the normalized range [-1, 1], so 5 acts like 1.
        observ, reward, terminated, truncated, _ = env.step(np.array([5.0], np.float32))
        expected = other.step(np.array([1.0], np.float32))
        np.testing.assert_allclose(observ, expected[0])
        assert observ.dtype == np.float32 and isinstance(reward, (float, np.floating))
    assert truncated and not terminated
    with pytest.raises(ValueError, match='NoSuchEnv'):
        environments.make_environment('NoSuchEnv-v0')


def test_unknown_environment_id_is_a_config_error():
    with pytest.raises(utility.ConfigError, match='Unknown environment'):
        utility.check_environment('Pendulum-v9')
    utility.check_environment('Pendulum-v1')


def test_unknown_backend_is_refused():
    with pytest.raises(utility.ConfigError, match='backend'):
        utility.define_batch_env([], 'threads')
