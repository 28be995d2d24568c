"""Tests of the export command line: its output, and one line for each bad input."""

import json
import os
import subprocess
import sys

import pytest

from agents.scripts import configs
from agents.scripts import run_api
from agents.scripts import train
from agents.scripts.cli import tensorflow_log_test
from agents.tools import checkpoints


def tiny_cartpole():
    config = configs.cartpole()
    config.update(
        num_agents=2, eval_episodes=2, eval_every=64, max_length=30, steps=192,
        policy_layers=(8,), value_layers=(8,), update_epochs=1, minibatch_size=32)
    return config


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp('export') / 'run')
    config = run_api.make_config(f'{__name__}:tiny_cartpole')
    run_api.save_config(config, logdir)
    list(train.train(config, logdir, 'inprocess'))
    return logdir


def _export(*flags, cwd, importtime=False):
    """Run the export command; return its exit code, its standard error and its imports."""
    command = [sys.executable] + (['-X', 'importtime'] if importtime else []) + [
        '-m', 'agents.scripts.export', *flags]
    environ = dict(os.environ, PYTHONPATH=os.getcwd())
    environ.pop('TF_CPP_MIN_LOG_LEVEL', None)  # TensorFlow's log at its default level.
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, timeout=300, env=environ)
    imported = [line.rsplit('|', 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith('import time:')]
    errors = [line for line in result.stderr.splitlines() if not line.startswith('import time:')]
    return result.returncode, errors, imported


@pytest.mark.integration
def test_exports_the_best_checkpoint_and_replaces_an_export_only_when_forced(run, tmp_path):
    outdir = tmp_path / 'policy'
    code, errors, _ = _export(f'--logdir={run}', f'--outdir={outdir}', cwd=tmp_path)
    assert code == 0, errors[-20:]
    tensorflow_log_test.assert_quiet('\n'.join(errors))
    assert sorted(os.listdir(outdir)) == [
        'export.json', 'policy.tflite', 'saved_model.pb', 'variables']
    assert oct(os.stat(outdir).st_mode & 0o777) == oct(0o777 & ~_umask())
    code, errors, imported = _export(
        f'--logdir={run}', f'--outdir={outdir}', '--checkpoint=best', '--format=saved_model',
        cwd=tmp_path, importtime=True)
    assert code == 1 and errors == [
        f'{outdir} exists: pass --force to replace it, or another --outdir.']
    assert 'tensorflow' not in imported
    code, errors, _ = _export(
        f'--logdir={run}', f'--outdir={outdir}', '--checkpoint=best', '--format=saved_model',
        '--force', cwd=tmp_path)
    assert code == 0, errors[-20:]
    with open(outdir / 'export.json') as file_:
        description = json.load(file_)
    assert description['checkpoint'] == checkpoints.read_best(run)['checkpoint']
    assert description['formats'] == ['saved_model']
    assert sorted(os.listdir(outdir)) == ['export.json', 'saved_model.pb', 'variables']
    assert sorted(os.listdir(tmp_path)) == ['policy']


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _run_without_checkpoint(tmp_path):
    logdir = tmp_path / 'empty-run'
    run_api.save_config(run_api.make_config('pendulum'), str(logdir))
    return logdir


def _run_with_unreadable_checkpoint(tmp_path):
    """A run whose checkpoint is an empty file: enough for the checks before TensorFlow loads."""
    logdir = _run_without_checkpoint(tmp_path)
    (logdir / 'model.ckpt-1.index').write_bytes(b'')
    return logdir


def _unwritable_directory(tmp_path):
    if os.geteuid() == 0:  # Root writes anywhere but in /sys.
        return '/sys/agents-export-test/policy'
    directory = tmp_path / 'read-only'
    directory.mkdir(mode=0o555)
    return str(directory / 'policy')


@pytest.mark.parametrize('flags, message', [
    (['--logdir=run', '--outdir=out', '--format=onnx'],
     "flag --format=['onnx']: choose one or more of saved_model, tflite"),
    (['--logdir=run'], 'Flag --outdir must have a value other than None.'),
    (['--logdir=nowhere', '--outdir=out'], 'No config.yaml in nowhere: pass --logdir='),
    (['--logdir=empty-run', '--outdir=out'],
     'No checkpoint in empty-run: train the run until it stores one.'),
])
def test_bad_input_is_one_line_before_tensorflow_loads(tmp_path, flags, message):
    _run_without_checkpoint(tmp_path)
    code, errors, imported = _export(*flags, cwd=tmp_path, importtime=True)
    assert code == 1 and len(errors) == 1 and message in errors[0], errors
    assert 'absl.flags' in imported and 'tensorflow' not in imported
    assert sorted(os.listdir(tmp_path)) == ['empty-run']


def test_an_unwritable_output_directory_is_one_line_and_leaves_nothing(tmp_path):
    run = _run_with_unreadable_checkpoint(tmp_path)
    outdir = _unwritable_directory(tmp_path)
    code, errors, imported = _export(
        f'--logdir={run}', f'--outdir={outdir}', cwd=tmp_path, importtime=True)
    assert code == 1 and len(errors) == 1, errors
    assert errors[0].startswith('Cannot write to ') and 'Pass an --outdir you can write to' in (
        errors[0])
    assert 'tensorflow' not in imported and not os.path.exists(outdir)


@pytest.mark.integration
def test_best_of_a_run_without_a_best_evaluation_is_one_line(tmp_path):
    logdir = _run_with_unreadable_checkpoint(tmp_path)
    code, errors, _ = _export(
        f'--logdir={logdir}', f'--outdir={tmp_path / "policy"}', '--checkpoint=best',
        cwd=tmp_path)
    assert code == 1 and errors[-1:] == [
        f'The run {logdir} has no best checkpoint (best.json): runs keep one from their '
        f'first evaluation on. Pass --checkpoint=<path prefix> instead.'], errors
    assert sorted(os.listdir(tmp_path)) == ['empty-run']
