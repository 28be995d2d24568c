"""Tests of the messages between the parent and its workers."""

import os

import numpy as np

from agents.tools.envs import testing
from agents.tools.envs.parallel import protocol


def test_replies_keep_numpy_scalars_exact():
    info = {
        'float16': np.float16(0.1), 'float32': np.float32(np.pi), 'float64': np.float64(1e-310),
        'nan': np.float64('nan'), 'inf': np.float32('-inf'), 'bool': np.bool_(True),
        'int8': np.int8(-128), 'int16': np.int16(-32768), 'int32': np.int32(2**31 - 1),
        'int64': np.int64(-2**63), 'uint8': np.uint8(255), 'uint16': np.uint16(65535),
        'uint32': np.uint32(2**32 - 1), 'uint64': np.uint64(2**64 - 1),
        'python': [1.5, 2, True, 'text'], 'array': np.arange(3, dtype=np.float32)}
    read_fd, write_fd = os.pipe()
    try:
        protocol.write(write_fd, protocol.encode(protocol.RESULT, ({3: info}, {})))
        kind, (infos, first_infos) = protocol.read(read_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert kind == protocol.RESULT and first_infos == {}
    testing.assert_identical(infos[3], info)
