"""Tests of the tuning worker: tiny trials that train, report, prune, fail and sample again."""

import glob
import os

import optuna
import pytest

from agents.scripts import configs
from agents.scripts import run_api
from agents.scripts.tuning import report
from agents.scripts.tuning import search_space
from agents.scripts.tuning import studies
from agents.scripts.tuning import worker

CONFIG = f'{__name__}:tiny_pendulum'


def tiny_pendulum():
    """Pendulum trials of 100-step evaluations, a few seconds each."""
    config = configs.pendulum()
    config.update(
        num_agents=2, rollout_length=50, max_length=50, steps=200, eval_every=100,
        eval_episodes=2, policy_layers=(16,), value_layers=(16,), update_epochs=2,
        minibatch_size=50)
    return config


SPACE = {
    'learning_rate': dict(low=1e-4, high=1e-2, log=True),
    'policy_layers': dict(choices=[[16], [32]]),
}


def study_settings(**changes):
    """The settings of a study of `CONFIG` over `SPACE`, with `changes`."""
    dimensions = search_space.resolve(SPACE, CONFIG)
    settings = dict(
        config=CONFIG, steps=200, seeds=[100], last_evals=1, report_every=100,
        space={dimension.key: dimension.spec() for dimension in dimensions},
        sampler_seed=0, command='python -m agents.scripts.tune ...')
    settings.update(changes)
    return settings


def worker_job(logdir, trials):
    """What a worker does in a study of `trials` trials in `logdir`, in this process."""
    return dict(
        logdir=str(logdir), command='test', trials=trials, startup_trials=1, prune=True,
        prune_after=0, env_backend='inprocess', backend_options={}, env_timeout=None,
        register=[])


@pytest.mark.integration
def test_trial_below_the_median_is_pruned_and_keeps_its_checkpoint(tmp_path):
    studies.create_or_check(str(tmp_path), study_settings())
    study = studies.open_study(str(tmp_path))
    # A completed trial that scored 0 at every evaluation, the best a pendulum can.
    study.add_trial(optuna.trial.create_trial(
        params=dict(learning_rate=1e-3, policy_layers='[16]'),
        distributions=dict(
            learning_rate=optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
            policy_layers=optuna.distributions.CategoricalDistribution(['[16]', '[32]'])),
        value=0.0, intermediate_values={100: 0.0, 200: 0.0}))
    worker.run(worker_job(tmp_path, trials=2))
    trial = studies.open_study(str(tmp_path)).trials[1]
    assert trial.state == optuna.trial.TrialState.PRUNED
    assert list(trial.intermediate_values) == [100] and trial.intermediate_values[100] < 0
    [(name, evaluations)] = trial.user_attrs['evaluations'].items()
    assert evaluations == [[100, trial.intermediate_values[100]]]
    run = tmp_path / name
    assert run.name == f'trial0001_seed100-{__name__}.tiny_pendulum'
    assert (run / 'model.ckpt-100.index').exists()
    config = run_api.load_config(str(run))  # An ordinary run that train.py resumes.
    # Sampled floats are rounded to three significant digits.
    assert config.seed == 100
    assert config.learning_rate == float(f'{trial.params["learning_rate"]:.3g}')
    assert config.policy_layers == {'[16]': (16,), '[32]': (32,)}[trial.params['policy_layers']]


def whole_episodes():
    """Tiny pendulum trials that collect whole episodes, with GAE."""
    config = tiny_pendulum()
    config.update(rollout_length=None, update_every=2, objective='kl_penalty')
    return config


def test_sampled_settings_that_the_schema_refuses_fail_the_trial_only(tmp_path):
    space = dict(rollout_length=dict(choices=[None, 50]), gae_lambda=dict(choices=[None, 0.95]))
    dimensions = search_space.resolve(space, f'{__name__}:whole_episodes')  # Each is valid.
    studies.create_or_check(str(tmp_path), study_settings(
        config=f'{__name__}:whole_episodes',
        space={dimension.key: dimension.spec() for dimension in dimensions}))
    study = studies.open_study(str(tmp_path))
    study.enqueue_trial(dict(rollout_length=50, gae_lambda=None))  # Together they are not.
    worker.run(worker_job(tmp_path, trials=1))
    [trial] = studies.open_study(str(tmp_path)).trials
    assert trial.state == optuna.trial.TrialState.FAIL
    assert 'rollout_length needs gae_lambda' in trial.user_attrs['error']
    assert not glob.glob(str(tmp_path / 'trial0*'))  # No run directory.
    [row] = report.rows(study, dimensions)
    assert row['state'] == 'failed' and row['score'] is None


def _sample(logdir, sampler_seed, trials):
    """Add `trials` trials to the study in `logdir`, each scored by its learning rate.

    Returns:
      The settings sampled for them.
    """
    os.makedirs(logdir, exist_ok=True)
    studies.create_or_check(str(logdir), study_settings(sampler_seed=sampler_seed))
    study = studies.open_study(str(logdir))
    dimensions = search_space.resolve(SPACE, CONFIG)
    sampled = []
    for _ in range(trials):
        trial, _ = worker._next_trial(
            study, worker_job(logdir, len(study.trials) + 1), sampler_seed)
        settings = {dimension.key: dimension.sample(trial) for dimension in dimensions}
        study.tell(trial, -abs(settings['learning_rate'] - 1e-3))
        sampled.append(settings)
    return sampled


def test_a_seeded_study_samples_the_same_trials_again(tmp_path):
    first = _sample(tmp_path / 'first', sampler_seed=3, trials=6)
    assert len({settings['learning_rate'] for settings in first}) == 6
    # The same study again, in two commands: the second samples on from trial 3.
    again = _sample(tmp_path / 'again', 3, trials=3) + _sample(tmp_path / 'again', 3, trials=3)
    assert again == first
    assert _sample(tmp_path / 'other', sampler_seed=4, trials=6) != first
