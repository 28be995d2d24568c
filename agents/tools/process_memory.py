"""Keep the resident memory of a training process low.

Three things, measured in docs/design/memory.md, hold most of a trainer's
memory beyond what it uses:

- Loading TensorFlow imports Keras 3 eagerly, when it is installed, and with
  it pandas, matplotlib and IPython, and h5py and SciPy besides: about
  115 MiB that a graph-mode trainer never uses. `skipping_unused_imports()`
  skips them while TensorFlow loads; importing them still works afterwards.
- glibc's allocator keeps the memory that graph optimization and XLA's
  compiler free in its heaps. `release_free_memory()` returns it to the
  system; the training loop calls it every few seconds.
- XLA's CPU compiler, emitting fused loops through MLIR (its fusion
  emitters), holds about 80 MiB more while it compiles PPO's whole update
  than with its classic emitters, and the update runs no faster for it.
  `prefer_classic_xla_emitters()` chooses the classic ones.

Importing this module does not import TensorFlow.
"""

import contextlib
import ctypes
import functools
import importlib.metadata
import os
import sys

# The XLA flag that chooses the emitters, and the first TensorFlow release known to
# have it: XLA stops the process on a flag it does not know.
_EMITTERS_FLAG = 'xla_cpu_use_fusion_emitters'
_EMITTERS_FLAG_SINCE = (2, 21)
# Modules TensorFlow imports as it loads, if installed, that graph-mode
# training never uses: Keras 3's optimizers (and so all of Keras, with pandas,
# matplotlib and IPython), and h5py and SciPy for TensorFlow's own legacy Keras.
_SKIPPED = ('keras.src.optimizers', 'h5py', 'scipy')


@contextlib.contextmanager
def skipping_unused_imports():
    """Within the context, importing TensorFlow skips modules that training never uses.

    TensorFlow tolerates a failed import of each of them. A module marked as
    missing in `sys.modules` fails to import before anything of it loads;
    the marks are gone once the context ends, so a later `import keras`
    works. Modules already loaded are left alone.

    Yields:
      Nothing.
    """
    marked = [name for name in _SKIPPED if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None
    try:
        yield
    finally:
        for name in marked:
            if sys.modules.get(name, True) is None:
                del sys.modules[name]


def release_free_memory():
    """Return the free pages of the allocator's heaps to the system.

    Calls glibc's `malloc_trim`; does nothing where the C library is not glibc.

    Returns:
      Whether memory was returned.
    """
    trim = _malloc_trim()
    return bool(trim and trim(0))


@functools.cache
def _malloc_trim():
    """The `malloc_trim` function of glibc, or None elsewhere."""
    try:
        return ctypes.CDLL(None).malloc_trim  # The symbols the process has loaded.
    except (AttributeError, OSError, TypeError):
        return None


def prefer_classic_xla_emitters(environ=os.environ):
    """Have XLA's CPU compiler emit fused loops with its classic emitters.

    Adds `--xla_cpu_use_fusion_emitters=false` to `XLA_FLAGS` unless the
    variable already sets that flag, and only for a TensorFlow release that
    knows it. XLA reads the variable once, before it first compiles, so call
    this before TensorFlow loads; the processes this one starts inherit it.
    The classic emitters round some results differently, so runs with and
    without them differ in the last bits.

    Args:
      environ: The environment to change; this process's by default.

    Returns:
      Whether the flag was added.
    """
    flags = environ.get('XLA_FLAGS', '')
    if _EMITTERS_FLAG in flags or _tensorflow_version() < _EMITTERS_FLAG_SINCE:
        return False
    environ['XLA_FLAGS'] = f'{flags} --{_EMITTERS_FLAG}=false'.strip()
    return True


def _tensorflow_version():
    """The installed TensorFlow's (major, minor) release, or (0, 0) if unknown."""
    for distribution in ('tensorflow', 'tensorflow-cpu'):
        try:
            release = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
        parts = release.split('.')[:2]
        if all(part.isdigit() for part in parts) and len(parts) == 2:
            return tuple(int(part) for part in parts)
    return (0, 0)
