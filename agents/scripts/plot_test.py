"""Tests of the plot command."""

import os
import subprocess
import sys

import pytest

from agents.scripts.cli import tensorflow_log_test
from agents.scripts.plotting.curves_test import write_scores


@pytest.mark.integration
def test_command_line_writes_a_png_of_the_runs(tmp_path):
    for seed, offset in enumerate([0.0, 2.0]):
        write_scores(str(tmp_path / f'seed{seed}-pendulum'), [100, 200], [offset, offset + 1])
    environ = dict(os.environ, PYTHONPATH=os.getcwd())
    environ.pop('TF_CPP_MIN_LOG_LEVEL', None)  # TensorFlow's log at its default level.
    result = subprocess.run(
        [sys.executable, '-m', 'agents.scripts.plot', f'--logdir={tmp_path}'],
        capture_output=True, text=True, env=environ, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    tensorflow_log_test.assert_quiet(result.stderr)
    assert 'pendulum: 2 run(s), last evaluation score 2.0' in result.stdout
    assert os.path.getsize(tmp_path / 'plot.png') > 1000
    result = subprocess.run(
        [sys.executable, '-m', 'agents.scripts.plot', f'--logdir={tmp_path / "missing"}'],
        capture_output=True, text=True, env=environ, timeout=120)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith('Error: No directory')
