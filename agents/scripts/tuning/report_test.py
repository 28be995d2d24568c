"""Tests of what a tuning study reports: the table of its trials and its best config."""

import os
import subprocess
import sys

import optuna

from agents.scripts import configs
from agents.scripts.tuning import report
from agents.scripts.tuning import search_space
from agents.scripts.tuning.worker_test import SPACE
from agents.scripts.tuning.worker_test import study_settings


def test_best_config_of_a_shipped_config_calls_it_and_overrides_the_searched_keys():
    study = optuna.create_study(direction='maximize')
    study.set_user_attr('settings', study_settings(config='pendulum', seeds=[100, 101]))
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
    table = report.rows(study, dimensions)
    assert [(row['trial'], row['state'], row['score']) for row in table] == [
        (0, 'complete', -300.0), (1, 'complete', -150.0), (2, 'pruned', -900.0)]
    assert report.markdown(table, dimensions).splitlines()[2:] == [
        '| 0 | complete | -300.0 | 200 | 0.00235 | (32,) |',
        '| **1** | complete | -150.0 | 200 | 0.00123 | (32,) |',
        '| 2 | pruned | -900.0 | 100 | 0.0001 | (16,) |']
    source = report.best_config(study, table)
    lint = subprocess.run(
        [sys.executable, '-m', 'ruff', 'check', '--no-cache', '--stdin-filename',
         'my_configs.py', '-'], input=source, capture_output=True, text=True,
        cwd=os.path.join(os.path.dirname(__file__), '..', '..', '..'))
    assert lint.returncode == 0, lint.stdout  # Pasted into a linted module, it passes.
    namespace = {}
    exec(source, namespace)
    config = namespace['pendulum_tuned']()
    assert config == dict(configs.pendulum(), learning_rate=0.00123, policy_layers=(32,))
    assert 'Tuned at 200 steps on seeds 100, 101' in namespace['pendulum_tuned'].__doc__


def test_the_recorded_command_names_no_directory_of_the_machine():
    command = ('python -m agents.scripts.tune --config=hopper '
               '--space=/home/me/agents/benchmarks/tune_spaces/hopper.yaml '
               '--logdir=/scratch/studies/hopper')
    assert report.portable_command(command, '/home/me/agents') == (
        'python -m agents.scripts.tune --config=hopper '
        '--space=benchmarks/tune_spaces/hopper.yaml --logdir=DIR/hopper')
