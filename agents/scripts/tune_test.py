"""Tests of the tune command: studies of tiny trials that run, prune, resume and report."""

import glob
import importlib
import json
import os
import signal
import subprocess
import sys
import threading

import optuna
import pytest

from agents.scripts import configs
from agents.scripts import search_space
from agents.scripts import tensorflow_log_test
from agents.scripts import tune_report
from agents.scripts import tune_study
from agents.scripts import tune_worker
from agents.scripts import utility
from agents.tools.schema import ConfigError

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


def _settings(**changes):
    dimensions = search_space.resolve(SPACE, CONFIG)
    settings = dict(
        config=CONFIG, steps=200, seeds=[100], last_evals=1, report_every=100,
        space={dimension.key: dimension.spec() for dimension in dimensions},
        sampler_seed=0, command='python -m agents.scripts.tune ...')
    settings.update(changes)
    return settings


def _job(logdir, trials):
    return dict(
        logdir=str(logdir), command='test', trials=trials, startup_trials=1, prune=True,
        prune_after=0, env_backend='inprocess', backend_options={}, env_timeout=None,
        register=[])


def test_trial_below_the_median_is_pruned_and_keeps_its_checkpoint(tmp_path):
    tune_study.create_or_check(str(tmp_path), _settings())
    study = tune_study.open_study(str(tmp_path))
    # A completed trial that scored 0 at every evaluation, the best a pendulum can.
    study.add_trial(optuna.trial.create_trial(
        params=dict(learning_rate=1e-3, policy_layers='[16]'),
        distributions=dict(
            learning_rate=optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
            policy_layers=optuna.distributions.CategoricalDistribution(['[16]', '[32]'])),
        value=0.0, intermediate_values={100: 0.0, 200: 0.0}))
    tune_worker.run(_job(tmp_path, trials=2))
    trial = tune_study.open_study(str(tmp_path)).trials[1]
    assert trial.state == optuna.trial.TrialState.PRUNED
    assert list(trial.intermediate_values) == [100] and trial.intermediate_values[100] < 0
    [(name, evaluations)] = trial.user_attrs['evaluations'].items()
    assert evaluations == [[100, trial.intermediate_values[100]]]
    run = tmp_path / name
    assert run.name == f'trial0001_seed100-{__name__}.tiny_pendulum'
    assert (run / 'model.ckpt-100.index').exists()
    config = utility.load_config(str(run))  # An ordinary run that train.py resumes.
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
    tune_study.create_or_check(str(tmp_path), _settings(
        config=f'{__name__}:whole_episodes',
        space={dimension.key: dimension.spec() for dimension in dimensions}))
    study = tune_study.open_study(str(tmp_path))
    study.enqueue_trial(dict(rollout_length=50, gae_lambda=None))  # Together they are not.
    tune_worker.run(_job(tmp_path, trials=1))
    [trial] = tune_study.open_study(str(tmp_path)).trials
    assert trial.state == optuna.trial.TrialState.FAIL
    assert 'rollout_length needs gae_lambda' in trial.user_attrs['error']
    assert not glob.glob(str(tmp_path / 'trial0*'))  # No run directory.
    [row] = tune_report.rows(study, dimensions)
    assert row['state'] == 'failed' and row['score'] is None


def _sample(logdir, sampler_seed, trials):
    """Add `trials` trials to the study in `logdir`, each scored by its learning rate.

    Returns:
      The settings sampled for them.
    """
    os.makedirs(logdir, exist_ok=True)
    tune_study.create_or_check(str(logdir), _settings(sampler_seed=sampler_seed))
    study = tune_study.open_study(str(logdir))
    dimensions = search_space.resolve(SPACE, CONFIG)
    sampled = []
    for _ in range(trials):
        trial, _ = tune_worker._next_trial(
            study, _job(logdir, len(study.trials) + 1), sampler_seed)
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


def test_study_resumes_only_with_its_settings_and_one_command_at_a_time(tmp_path):
    assert not tune_study.create_or_check(str(tmp_path), _settings())
    assert tune_study.create_or_check(str(tmp_path), _settings(command='another'))
    with pytest.raises(ConfigError, match=(
            r'^The study in .* was started with other settings: seeds \[100\] \(here '
            r'\[1, 2\]\)\. Resume it with: python -m agents.scripts.tune \.\.\.; or pass '
            r'another --logdir for a new study\.$')):
        tune_study.create_or_check(str(tmp_path), _settings(seeds=[1, 2]))
    with tune_study.command_lock(str(tmp_path)):
        with pytest.raises(ConfigError, match=rf'^Another tune command \(process {os.getpid()}'):
            with tune_study.command_lock(str(tmp_path)):
                pass
    with tune_study.command_lock(str(tmp_path)):  # Free again.
        pass


def test_best_config_of_a_shipped_config_calls_it_and_overrides_the_searched_keys():
    study = optuna.create_study(direction='maximize')
    study.set_user_attr('settings', _settings(config='pendulum', seeds=[100, 101]))
    distributions = dict(
        learning_rate=optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
        policy_layers=optuna.distributions.CategoricalDistribution(['[16]', '[32]']))
    for value, learning_rate in ((-300.0, 2.345678e-3), (-150.0, 1.234567e-3)):
        study.add_trial(optuna.trial.create_trial(
            params=dict(learning_rate=learning_rate, policy_layers='[32]'),
            distributions=distributions, value=value, intermediate_values={200: value}))
    study.add_trial(optuna.trial.create_trial(
        params=dict(learning_rate=1e-4, policy_layers='[16]'), distributions=distributions,
        state=optuna.trial.TrialState.PRUNED, intermediate_values={100: -900.0}))
    dimensions = search_space.resolve(SPACE, 'pendulum')
    table = tune_report.rows(study, dimensions)
    assert [(row['trial'], row['state'], row['score']) for row in table] == [
        (0, 'complete', -300.0), (1, 'complete', -150.0), (2, 'pruned', -900.0)]
    assert tune_report.markdown(table, dimensions).splitlines()[2:] == [
        '| 0 | complete | -300.0 | 200 | 0.00235 | (32,) |',
        '| **1** | complete | -150.0 | 200 | 0.00123 | (32,) |',
        '| 2 | pruned | -900.0 | 100 | 0.0001 | (16,) |']
    source = tune_report.best_config(study, table)
    lint = subprocess.run(
        [sys.executable, '-m', 'ruff', 'check', '--no-cache', '--stdin-filename',
         'my_configs.py', '-'], input=source, capture_output=True, text=True,
        cwd=os.path.join(os.path.dirname(__file__), '..', '..'))
    assert lint.returncode == 0, lint.stdout  # Pasted into a linted module, it passes.
    namespace = {}
    exec(source, namespace)
    config = namespace['pendulum_tuned']()
    assert config == dict(configs.pendulum(), learning_rate=0.00123, policy_layers=(32,))
    assert 'Tuned at 200 steps on seeds 100, 101' in namespace['pendulum_tuned'].__doc__


def _tune(logdir, *flags, interrupt_on=None, environ=None):
    """Run the tune command; interrupt it with SIGINT once a file matches a pattern.

    Returns:
      Tuple of the return code and the lines of its output and of its errors.
    """
    environ = dict(os.environ, **(environ or {}))
    environ.pop('TF_CPP_MIN_LOG_LEVEL', None)  # TensorFlow's log at its default level.
    process = subprocess.Popen(
        [sys.executable, '-m', 'agents.scripts.tune', f'--logdir={logdir}', *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
    watchdog = threading.Timer(300, process.kill)
    watchdog.start()
    if interrupt_on:
        while not glob.glob(os.path.join(logdir, interrupt_on)) and process.poll() is None:
            threading.Event().wait(0.1)
        process.send_signal(signal.SIGINT)
    output, errors = process.communicate()
    watchdog.cancel()
    return process.returncode, output.splitlines(), errors.splitlines()


def test_command_runs_parallel_trials_resumes_after_ctrl_c_and_writes_the_best_config(tmp_path):
    (tmp_path / 'space.yaml').write_text(json.dumps(SPACE))
    logdir = str(tmp_path / 'study')
    # Trials of 20 evaluations, over a second each, so that Ctrl-C after the first
    # checkpoint reaches them mid-run also on a loaded machine.
    steps = 2000
    flags = [f'--config={CONFIG}', '--trials=2', f'--space={tmp_path}/space.yaml',
             '--env_backend=inprocess', f'--steps={steps}', '--seeds=7']
    code, lines, errors = _tune(
        logdir, *flags, '--jobs=2', interrupt_on='trial*/model.ckpt-*.index')
    assert code == 130, '\n'.join(lines + errors)
    # Neither the command nor its worker processes print TensorFlow's C++ log.
    tensorflow_log_test.assert_quiet('\n'.join(errors))
    assert errors[-1] == (
        f'Interrupted by SIGINT. The study in {logdir} is kept; resume it with the same '
        f'command: python -m agents.scripts.tune --logdir={logdir} ' + ' '.join(flags) +
        ' --jobs=2')
    study = tune_study.open_study(logdir)
    interrupted = {trial.number: trial.intermediate_values for trial in study.trials}
    assert all(trial.state == optuna.trial.TrialState.RUNNING for trial in study.trials)
    assert interrupted and all(max(values, default=0) < steps for values in interrupted.values())

    code, lines, errors = _tune(logdir, *flags, '--jobs=1')
    assert code == 0, '\n'.join(lines + errors)
    tensorflow_log_test.assert_quiet('\n'.join(errors))
    assert 'Resuming the study in' in lines[0]
    study = tune_study.open_study(logdir)
    assert len(study.trials) == 2  # The interrupted trials continued, under their numbers.
    for trial in study.trials:
        assert trial.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        assert trial.intermediate_values.items() >= interrupted.get(trial.number, {}).items()
    assert sorted(os.listdir(logdir)) == [
        'best_config.py', 'study.db', f'trial0000_seed7-{__name__}.tiny_pendulum',
        f'trial0001_seed7-{__name__}.tiny_pendulum', 'trials.json', 'trials.lock', 'trials.md',
        'tune.lock']
    table = (tmp_path / 'study' / 'trials.md').read_text()
    assert table.startswith(
        '| trial | state | score | steps | learning_rate | policy_layers |\n')
    assert table in '\n'.join(lines) + '\n'
    best = study.best_trial
    assert f'| **{best.number}** | complete | {best.value:.1f} | {steps} |' in table

    # The best config, pasted as a module, is a config function that train.py runs.
    sys.path.insert(0, logdir)
    try:
        module = importlib.import_module('best_config')
        config = utility.make_config('best_config:tiny_pendulum_tuned')
    finally:
        sys.path.remove(logdir)
        sys.modules.pop('best_config', None)
    assert f'Tuned at {steps:,} steps on seeds 7' in module.tiny_pendulum_tuned.__doc__
    assert config.learning_rate == search_space.Dimension(
        'learning_rate', 'float', 1e-4, 1e-2, True).value(best.params['learning_rate'])
    assert config.steps == 200  # The config's own, not the tuning's.


@pytest.mark.parametrize('flags, message', [
    (['--trials=0'], 'flag --trials=0: 0 is not a positive integer'),
    (['--trials=2', '--seeds=1,a'], '--seeds must be distinct whole numbers >= 0'),
    (['--trials=2', '--seeds=1,1'], '--seeds must be distinct whole numbers >= 0'),
    (['--trials=2', '--jobs=0'], 'flag --jobs=0: 0 is not a positive integer'),
    (['--trials=2', '--space=/nonexistent.yaml'], 'Cannot read the space file'),
])
def test_bad_flags_are_refused_before_tensorflow_loads(tmp_path, flags, message):
    code, lines, errors = _tune(str(tmp_path / 'study'), f'--config={CONFIG}', *flags)
    assert code == 1 and not lines and len(errors) == 1 and message in errors[0], errors
    assert not (tmp_path / 'study').exists()


def test_missing_optuna_says_how_to_install_it(tmp_path):
    command = (
        'import runpy, sys; sys.modules["optuna"] = None; '
        f'sys.argv = ["tune", "--logdir={tmp_path}", "--config=pendulum", "--trials=1"]; '
        'runpy.run_module("agents.scripts.tune", run_name="__main__")')
    result = subprocess.run(
        [sys.executable, '-c', command], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        'The tune command needs Optuna: pip install -e .[tune]']
