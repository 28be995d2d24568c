"""Tests of what keeps a training process's memory low."""

import ctypes
import importlib.util
import os
import subprocess
import sys
import types

import pytest

from agents.tools import process_memory


def _resident_kib():
    with open('/proc/self/status') as file_:
        for line in file_:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise AssertionError('no VmRSS in /proc/self/status')


@pytest.mark.integration
def test_tensorflow_loads_without_keras_and_keras_still_imports_after():
    pytest.importorskip('keras')
    # SciPy and h5py are optional: those installed must import after the skip.
    installed = [name for name in ('keras', 'scipy', 'h5py') if importlib.util.find_spec(name)]
    program = (
        'import importlib, sys\n'
        'from agents.scripts.cli import tensorflow_log\n'
        'tf = tensorflow_log.import_quietly()\n'
        'tf.compat.v1.disable_eager_execution()\n'
        'skipped = ("keras", "pandas", "matplotlib", "h5py", "scipy")\n'
        'print([name for name in skipped if name in sys.modules])\n'
        'print(tf.compat.v1.Session().run(tf.constant(2) * 3))\n'
        f'print([importlib.import_module(name).__name__ for name in {installed!r}])\n'
        'import keras\n'
        'print(keras.optimizers.Adam.__name__)\n')
    result = subprocess.run(
        [sys.executable, '-c', program], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == ['[]', '6', repr(installed), 'Adam']


def test_the_marks_are_gone_after_the_context_also_on_errors(monkeypatch):
    for name in process_memory._SKIPPED:
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(RuntimeError):
        with process_memory.skipping_unused_imports():
            for name in process_memory._SKIPPED:
                with pytest.raises(ModuleNotFoundError):
                    __import__(name)
            raise RuntimeError('in the context')
    assert not set(process_memory._SKIPPED) & set(sys.modules)


def test_loaded_modules_are_left_alone(monkeypatch):
    loaded = types.ModuleType('h5py')
    monkeypatch.setitem(sys.modules, 'h5py', loaded)
    with process_memory.skipping_unused_imports():
        assert sys.modules['h5py'] is loaded
    assert sys.modules['h5py'] is loaded


def test_freed_heap_memory_goes_back_to_the_system():
    if process_memory._malloc_trim() is None:
        pytest.skip('the C library has no malloc_trim')
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    # 64 MiB in blocks below the size that malloc maps on its own, freed but
    # for every 16th one: the free memory lies between used blocks, where only
    # trimming can return it.
    blocks = [libc.malloc(4096) for _ in range(16384)]
    for block in blocks:
        ctypes.memset(block, 1, 4096)
    kept = blocks[::16]
    for index, block in enumerate(blocks):
        if index % 16:
            libc.free(block)
    before = _resident_kib()
    assert process_memory.release_free_memory()
    assert before - _resident_kib() > 32 * 1024  # Of the 60 MiB freed.
    for block in kept:
        libc.free(block)


@pytest.mark.parametrize('before, after', [
    (None, '--xla_cpu_use_fusion_emitters=false'),
    ('--xla_dump_to=dumps', '--xla_dump_to=dumps --xla_cpu_use_fusion_emitters=false'),
    ('--xla_cpu_use_fusion_emitters=true', '--xla_cpu_use_fusion_emitters=true'),
])
def test_the_classic_emitters_are_chosen_unless_xla_flags_chose(monkeypatch, before, after):
    monkeypatch.setattr(process_memory, '_tensorflow_version', lambda: (2, 21))
    environ = {} if before is None else {'XLA_FLAGS': before}
    assert process_memory.prefer_classic_xla_emitters(environ) == (before != after)
    assert environ['XLA_FLAGS'] == after


def test_a_tensorflow_that_may_not_know_the_flag_is_left_alone(monkeypatch):
    monkeypatch.setattr(process_memory, '_tensorflow_version', lambda: (2, 20))
    environ = {}
    assert not process_memory.prefer_classic_xla_emitters(environ)
    assert environ == {}


@pytest.mark.integration
def test_the_scripts_compile_with_xla_under_the_flag():
    # XLA stops the whole process on a flag it does not know, so compile for real.
    program = (
        'import os\n'
        'from agents.scripts.cli import tensorflow_log\n'
        'tf = tensorflow_log.import_quietly()\n'
        'tf.compat.v1.disable_eager_execution()\n'
        'x = tf.compat.v1.placeholder(tf.float32, [2])\n'  # A constant would be folded.
        'double_tanh = tf.function(lambda x: 2 * tf.tanh(x), jit_compile=True)\n'
        'print(tf.compat.v1.Session().run(double_tanh(x), {x: [0.0, 100.0]}))\n'
        'print(os.environ.get("XLA_FLAGS"))\n')
    environ = {key: value for key, value in os.environ.items() if key != 'XLA_FLAGS'}
    result = subprocess.run(
        [sys.executable, '-c', program], capture_output=True, text=True, env=environ)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == '[0. 2.]'
    if process_memory._tensorflow_version() >= process_memory._EMITTERS_FLAG_SINCE:
        assert lines[1] == '--xla_cpu_use_fusion_emitters=false'
