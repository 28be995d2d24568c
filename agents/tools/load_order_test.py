"""Tests of `load_order`: PyTorch's Triton and TensorFlow in one process."""

import importlib.util
import subprocess
import sys

import pytest

from agents.tools import load_order
from agents.tools.envs import testing

needs_triton = pytest.mark.skipif(
    importlib.util.find_spec('triton') is None, reason='Triton is not installed.')


def _run(code):
    return subprocess.run(
        [sys.executable, '-c', code], cwd=testing.REPOSITORY, capture_output=True, text=True)


@needs_triton
@pytest.mark.integration
def test_triton_loaded_first_survives_tensorflow():
    # Without the first two lines, loading Triton's library kills the process.
    result = _run(
        'from agents.tools import load_order\n'
        'assert load_order.load_triton_before_tensorflow()\n'
        'import tensorflow\n'
        'import triton._C.libtriton\n')
    assert result.returncode == 0, result.stderr[-2000:]


@needs_triton
@pytest.mark.integration
def test_tensorflow_loaded_first_warns_and_loads_nothing():
    result = _run(
        'import sys, warnings\n'
        'import tensorflow\n'
        'from agents.tools import load_order\n'
        'with warnings.catch_warnings(record=True) as caught:\n'
        '    warnings.simplefilter("always")\n'
        '    assert not load_order.load_triton_before_tensorflow()\n'
        'assert "triton" not in sys.modules\n'
        'assert "TensorFlow was loaded before Triton" in str(caught[0].message)\n')
    assert result.returncode == 0, result.stderr[-2000:]


def test_without_triton_nothing_is_loaded(monkeypatch):
    monkeypatch.delitem(sys.modules, 'triton', raising=False)
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name: None)
    assert load_order.load_triton_before_tensorflow()
    assert 'triton' not in sys.modules
