"""Tests of the tune command: studies of tiny trials that run, resume and report."""

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

from agents.scripts import run_api
from agents.scripts.cli import tensorflow_log_test
from agents.scripts.tuning import search_space
from agents.scripts.tuning import studies
from agents.scripts.tuning import worker_test
from agents.scripts.tuning.worker_test import CONFIG
from agents.scripts.tuning.worker_test import SPACE


def _tune(logdir, *flags, interrupt_on=None, environ=None, python_flags=()):
    """Run the tune command; interrupt it with SIGINT once a file matches a pattern.

    Returns:
      Tuple of the return code and the lines of its output and of its errors.
    """
    environ = dict(os.environ, **(environ or {}))
    environ.pop('TF_CPP_MIN_LOG_LEVEL', None)  # TensorFlow's log at its default level.
    process = subprocess.Popen(
        [sys.executable, *python_flags, '-m', 'agents.scripts.tune', f'--logdir={logdir}', *flags],
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


@pytest.mark.integration
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
    study = studies.open_study(logdir)
    interrupted = {trial.number: trial.intermediate_values for trial in study.trials}
    assert all(trial.state == optuna.trial.TrialState.RUNNING for trial in study.trials)
    assert interrupted and all(max(values, default=0) < steps for values in interrupted.values())

    code, lines, errors = _tune(logdir, *flags, '--jobs=1')
    assert code == 0, '\n'.join(lines + errors)
    tensorflow_log_test.assert_quiet('\n'.join(errors))
    assert 'Resuming the study in' in lines[0]
    study = studies.open_study(logdir)
    assert len(study.trials) == 2  # The interrupted trials continued, under their numbers.
    for trial in study.trials:
        assert trial.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        assert trial.intermediate_values.items() >= interrupted.get(trial.number, {}).items()
    run = f'{worker_test.__name__}.tiny_pendulum'
    assert sorted(os.listdir(logdir)) == [
        'best_config.py', 'study.db', f'trial0000_seed7-{run}', f'trial0001_seed7-{run}',
        'trials.json', 'trials.lock', 'trials.md', 'tune.lock']
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
        config = run_api.make_config('best_config:tiny_pendulum_tuned')
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
    code, lines, errors = _tune(
        str(tmp_path / 'study'), f'--config={CONFIG}', *flags, python_flags=['-X', 'importtime'])
    imported = [line.rsplit('|', 1)[-1].strip() for line in errors
                if line.startswith('import time:')]
    errors = [line for line in errors if not line.startswith('import time:')]
    assert code == 1 and not lines and len(errors) == 1 and message in errors[0], errors
    assert 'tensorflow' not in imported
    assert not (tmp_path / 'study').exists()


def test_an_unknown_config_is_refused_before_tensorflow_loads(tmp_path):
    code, lines, errors = _tune(
        str(tmp_path / 'study'), '--config=pendulm', '--trials=2',
        python_flags=['-X', 'importtime'])
    imported = [line.rsplit('|', 1)[-1].strip() for line in errors
                if line.startswith('import time:')]
    [error] = [line for line in errors if not line.startswith('import time:')]
    assert code == 1 and not lines and 'tensorflow' not in imported
    assert error.startswith(
        "Unknown config 'pendulm' (did you mean 'pendulum'?). Choose one of: ant, ")
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
