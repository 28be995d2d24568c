"""Tests of keeping TensorFlow's C++ log out of what the scripts print."""

import os

import pytest

from agents.scripts.cli import tensorflow_log

# What TensorFlow 2.21 prints while it loads, before absl's log is initialized,
# with a line of each other severity, a fatal error and a line of Python's.
_ABSL_WARNING = (
    'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR')
_ONEDNN = (
    'I0000 00:00:1795695291.743360    5800 port.cc:153] oneDNN custom operations are on.')
_CUDART = (
    'I0000 00:00:1795695291.744028    5800 cudart_stub.cc:31] Could not find cuda drivers on '
    'your machine, GPU will not be used.')
_WARNING = 'W1126 12:15:49.132193  139967 gpu_device.cc:2344] Cannot dlopen some GPU libraries.'
_ERROR = (
    '2025-09-17 14:44:05.176998: E external/local_xla/xla/stream_executor/cuda/'
    'cuda_fft.cc:467] Unable to register cuFFT factory')
_FATAL = 'F0000 00:00:1795695291.744028    5800 port.cc:12] Check failed: the CPU lacks AVX'
_PYTHON = '/usr/lib/python3.11/site-packages/x.py:3: UserWarning: a Python warning'
_LINES = [_ABSL_WARNING, _ONEDNN, _CUDART, _WARNING, _ERROR, _FATAL, _PYTHON]

# TensorFlow's C++ log as a command's standard error shows it, for tests of commands.
MARKERS = ('absl::InitializeLog', 'oneDNN', 'cudart_stub')


def assert_quiet(stderr):
    """Assert that standard error holds no line of TensorFlow's C++ log at start-up."""
    noisy = [line for line in stderr.splitlines() if any(mark in line for mark in MARKERS)]
    assert not noisy, '\n'.join(noisy)


@pytest.mark.parametrize('level, kept', [
    (3, [_FATAL, _PYTHON]),
    (2, [_ERROR, _FATAL, _PYTHON]),
    (1, [_WARNING, _ERROR, _FATAL, _PYTHON]),
    (0, _LINES),
])
def test_the_log_below_the_level_is_dropped_from_what_any_code_writes(capfd, level, kept):
    with tensorflow_log.filtered_stderr(level):
        # Written to the file descriptor, as TensorFlow's C++ code writes.
        os.write(2, ''.join(line + '\n' for line in _LINES).encode())
    assert capfd.readouterr().err.splitlines() == kept


def test_the_level_is_three_unless_the_user_set_it(monkeypatch):
    monkeypatch.delenv('TF_CPP_MIN_LOG_LEVEL', raising=False)
    monkeypatch.setenv('XLA_FLAGS', '')  # Restored after the test.
    tensorflow = tensorflow_log.import_quietly()
    assert callable(tensorflow.compat.v1.Session)
    assert os.environ['TF_CPP_MIN_LOG_LEVEL'] == '3'
    monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '0')
    tensorflow_log.import_quietly()
    assert os.environ['TF_CPP_MIN_LOG_LEVEL'] == '0'
