"""The messages between a `ParallelBatchEnv` and its workers, and how they travel.

A message is one kind byte, followed for some kinds by the length and pickle
of a payload. Commands go from the parent to a worker, replies back; both are
posted in shared memory (see `commands` and `countdown`), and only those with
a payload, or meant to wake a sleeping process, also cross a pipe.
"""

import copyreg
import io
import os
import pickle
import struct
import time

from agents.tools.envs import info_columns

# Commands from the parent to a worker, one byte each, posted in `commands.Commands`.
# STEP steps all of the worker's environments and STEP_SOME those marked in
# the shared `stepping` array; neither has a payload nor uses the pipe, because
# the actions are in shared memory too. Nor has CLOSE, which a sleeping worker
# also finds in its pipe.
STEP = b's'
STEP_SOME = b'p'
RESET = b'r'
APPLY = b'f'
ATTACH = b'a'
ATTACH_INFOS = b'i'
CLOSE = b'x'
# Wakes a worker that sleeps on its pipe for a command posted in shared memory.
WAKE = b'w'
# Replies from a worker, one byte each, optionally followed by a payload.
DONE = b'.'
RESULT = b'+'
FAILURE = b'!'
KINDS_WITH_PAYLOAD = (RESET, APPLY, ATTACH, ATTACH_INFOS, RESULT, FAILURE)
# The reply to a step whose infos the worker wrote to the `InfoColumns`; never
# sent through the pipe.
INFOS_IN_COLUMNS = b'c'
_LENGTH = struct.Struct('<I')
_READ_SIZE = 1 << 16


def take_once(lock, seconds):
    """Take a lock and release it at once: another process's writes before it are then seen here.

    The lock is tried without sleeping, which would cost a wake-up when it is
    held for the moment it takes another process to count or post; one that
    died holding it is given up on after `seconds`.
    """
    locked = lock.acquire(False)
    deadline = None if locked else time.monotonic() + seconds
    while not locked and time.monotonic() < deadline:
        os.sched_yield()
        locked = lock.acquire(False)
    if locked:
        lock.release()


def _reduce_as(scalar_type, python_type):
    """A pickle reducer that sends a NumPy scalar as a Python number and its type."""
    # A closure: a `functools.partial` with keywords costs twice as much per call.
    def reduce(value):
        return scalar_type, (python_type(value),)
    return reduce


class _ReplyPickler(pickle.Pickler):
    """Pickles NumPy scalars as Python numbers plus their type, about twice as fast.

    Environments such as the MuJoCo tasks return infos of NumPy scalars at every
    step; NumPy's own pickling of a scalar (dtype plus raw bytes) dominates the
    cost of sending them. The conversion is exact for these types.
    """

    dispatch_table = copyreg.dispatch_table.copy()
    for _type, _python_type in info_columns.NUMPY_SCALARS.items():
        dispatch_table[_type] = _reduce_as(_type, _python_type)
    del _type, _python_type


def _dumps_reply(payload, pickle_protocol):
    buffer = io.BytesIO()
    _ReplyPickler(buffer, pickle_protocol).dump(payload)
    return buffer.getvalue()


def encode(kind, payload, dumps=_dumps_reply):
    """Bytes of one message: the kind byte, then the payload's length and pickle."""
    if kind not in KINDS_WITH_PAYLOAD:
        return kind
    body = dumps(payload, pickle.HIGHEST_PROTOCOL)
    return kind + _LENGTH.pack(len(body)) + body


def write(fd, data):
    """Write all bytes of `data` to a file descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read(fd, kind=None):
    """Read one message; raises EOFError if the other end is closed.

    Args:
      fd: The file descriptor to read from.
      kind: The message's kind byte, if the caller has read it already.

    Returns:
      Pair of the kind byte and the unpickled payload (None if it has none).
    """
    data = b''
    if kind is None:
        data = os.read(fd, _READ_SIZE)
        if not data:
            raise EOFError
        kind, data = data[:1], data[1:]
    if kind not in KINDS_WITH_PAYLOAD:
        return kind, None
    buffer = bytearray(data)
    while len(buffer) < _LENGTH.size:
        buffer += _read_more(fd, _READ_SIZE)
    end = _LENGTH.size + _LENGTH.unpack_from(buffer)[0]
    while len(buffer) < end:
        buffer += _read_more(fd, max(_READ_SIZE, end - len(buffer)))
    return kind, pickle.loads(memoryview(buffer)[_LENGTH.size:end])


def _read_more(fd, size):
    data = os.read(fd, size)
    if not data:
        raise EOFError
    return data
