"""Tests of the search spaces of the tune command: checked against the schema, and sampled."""

import glob
import os

import optuna
import pytest

from agents.scripts import configs
from agents.scripts.tuning import search_space
from agents.scripts.tuning import space_file
from agents.tools.schema import ConfigError


def kl_penalty():
    """Pendulum with the original's whole episodes, Monte Carlo returns and KL penalty."""
    config = configs.pendulum()
    config.update(rollout_length=None, gae_lambda=None, objective='kl_penalty')
    return config


SPACES = os.path.join(
    os.path.dirname(__file__), '..', '..', '..', 'benchmarks', 'tune_spaces')


def test_default_space_searches_the_keys_the_config_uses():
    pendulum = {dimension.key for dimension in search_space.resolve(None, 'pendulum')}
    assert {'learning_rate', 'clip_ratio', 'rollout_length',
            'init_std'} <= pendulum
    assert 'kl_target' not in pendulum  # Pendulum trains with the clipped objective.
    cartpole = {dimension.key for dimension in search_space.resolve(None, 'cartpole')}
    assert 'init_std' not in cartpole  # Its actions are discrete.
    whole_episodes = {
        dimension.key for dimension in search_space.resolve(None, f'{__name__}:kl_penalty')}
    assert 'kl_target' in whole_episodes and 'clip_ratio' not in whole_episodes
    assert 'rollout_length' not in whole_episodes and 'gae_lambda' not in whole_episodes


@pytest.mark.parametrize('path', sorted(glob.glob(os.path.join(SPACES, '*.yaml'))),
                         ids=os.path.basename)
def test_mujoco_spaces_fit_their_configs(path):
    config = os.path.basename(path)[:-len('.yaml')]
    dimensions = search_space.resolve(space_file.load(path), config, path)
    assert len(dimensions) >= 8


@pytest.mark.parametrize('specs, message', [
    ({'learnig_rate': dict(low=1e-4, high=1e-3)},
     "Invalid space file s.yaml: unknown key 'learnig_rate' (did you mean 'learning_rate'?)."),
    ({'seed': dict(choices=[1, 2])}, 'Invalid space file s.yaml: seed is set by --seeds'),
    ({'policy_layers': dict(low=16, high=64)},
     'policy_layers is tuple of int, not a number; give it {choices: [...]}.'),
    ({'learning_rate': dict(low=-1e-3, high=1e-3)}, 'learning_rate must be > 0, got -0.001.'),
    ({'learning_rate': dict(low=0.0, high=1e-3, log=True)}, 'true needs low > 0.'),
    ({'update_epochs': dict(low=1.5, high=4)}, 'needs int bounds low < high, got 1.5 and 4.'),
    ({'update_epochs': dict(low=5, high=5)}, 'needs int bounds low < high, got 5 and 5.'),
    ({'activation': dict(choices=['tanh', 'sigmoid'])},
     "activation must be 'tanh' or 'relu', got 'sigmoid'."),
    ({'activation': ['tanh', 'relu']}, 'activation needs {low: L, high: H} (and log: true)'),
    ({'discount': dict(low=0.9, high=0.99, step=0.01)}, 'discount needs {low: L, high: H}'),
])
def test_bad_space_is_refused_in_one_line(specs, message):
    with pytest.raises(ConfigError) as error:
        search_space.resolve(specs, 'pendulum', 'space file s.yaml')
    assert message in str(error.value) and '\n' not in str(error.value)


def test_samples_are_config_values_within_the_space():
    dimensions = search_space.resolve(dict(
        learning_rate=dict(low=1e-5, high=1e-3, log=True),
        update_epochs=dict(low=3, high=20),
        policy_layers=dict(choices=[[64, 64], [256, 256]]),
        discount=dict(choices=[0.95, 0.99])), 'pendulum')
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        trial = study.ask()
        values = {dimension.key: dimension.sample(trial) for dimension in dimensions}
        assert 1e-5 <= values['learning_rate'] <= 1e-3
        assert values['learning_rate'] == float(f'{values["learning_rate"]:.3g}')
        assert isinstance(values['update_epochs'], int) and 3 <= values['update_epochs'] <= 20
        assert values['policy_layers'] in ([64, 64], [256, 256])
        assert values['discount'] in (0.95, 0.99)
        # Optuna stores the tuple choices by label; the value maps back.
        assert trial.params['policy_layers'] in ('[64, 64]', '[256, 256]')
        for dimension in dimensions:
            assert dimension.value(trial.params[dimension.key]) == values[dimension.key]
