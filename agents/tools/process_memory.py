"""Keep the resident memory of a training process low.

Two things, measured in docs/design/memory.md, hold most of a trainer's
memory beyond what it uses:

- Loading TensorFlow imports Keras 3 eagerly, when it is installed, and with
  it pandas, matplotlib and IPython, and h5py and SciPy besides: about
  115 MiB that a graph-mode trainer never uses. `skipping_unused_imports()`
  skips them while TensorFlow loads; importing them still works afterwards.
- glibc's allocator keeps the memory that graph optimization and XLA's
  compiler free in its heaps. `release_free_memory()` returns it to the
  system; the training loop calls it every few seconds.

Importing this module does not import TensorFlow.
"""

import contextlib
import ctypes
import functools
import sys

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
