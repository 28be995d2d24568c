"""NumPy arrays in one shared-memory segment, visible to several processes."""

from multiprocessing import shared_memory

import numpy as np

# Each array starts on a cache-line boundary so arrays written by different
# processes do not share a line more than their own contents require.
_ALIGNMENT = 64


class SharedArrays:
    """Named NumPy arrays that live in a single `multiprocessing.shared_memory` block.

    The creating process owns the block and unlinks it; other processes attach by
    name with the same layout and see the same memory, so arrays move between
    processes without pickling or copying.
    """

    def __init__(self, layout, name=None):
        """Create a new block or attach to an existing one.

        Args:
          layout: Dict from array name to `(shape, dtype)`; every process must use
            the same layout (the dict order matters).
          name: Name of an existing block to attach to; None creates a new block,
            owned (and later unlinked) by this object.
        """
        self.layout = {
            key: (tuple(shape), np.dtype(dtype).str) for key, (shape, dtype) in layout.items()}
        offsets, size = {}, 0
        for key, (shape, dtype) in self.layout.items():
            offsets[key] = size
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            size += -(-nbytes // _ALIGNMENT) * _ALIGNMENT
        self._owner = name is None
        self._memory = shared_memory.SharedMemory(
            name=name, create=self._owner, size=max(size, 1) if self._owner else 0)
        self._arrays = {
            key: np.ndarray(shape, dtype, buffer=self._memory.buf, offset=offsets[key])
            for key, (shape, dtype) in self.layout.items()}

    @property
    def name(self):
        """Name under which other processes attach to the block."""
        return self._memory.name

    def __getitem__(self, key):
        """The array called `key`, a view into shared memory."""
        return self._arrays[key]

    def close(self):
        """Unmap the block and, in the creating process, remove it from the system.

        Views handed out earlier must no longer be used. Safe to call more than once.
        """
        if self._memory is None:
            return
        self._arrays = {}
        try:
            self._memory.close()
        except BufferError:
            # A caller still holds a view; the mapping goes away with it, and
            # unlinking below still removes the segment's name.
            pass
        if self._owner:
            try:
                self._memory.unlink()
            except FileNotFoundError:
                pass
        self._memory = None
