"""Tests of the countdown of the replies an exchange with the workers awaits."""

import multiprocessing
import os
import threading
import time

from agents.tools.envs import testing
from agents.tools.envs.parallel import countdown as countdown_lib
from agents.tools.envs.parallel import protocol


def test_countdown_counts_replies_and_wakes_only_a_waiting_parent():
    context = multiprocessing.get_context('forkserver')
    countdown = countdown_lib.Countdown(context, 3)
    ends = [countdown.worker_end(index) for index in range(3)]
    read_fd, write_fd = os.pipe()
    try:
        # Empty replies, and steps whose infos are in the shared columns, use
        # no pipe at all; coming before the parent waits, they wake nothing.
        for end, reply in zip(ends, [protocol.DONE, protocol.INFOS_IN_COLUMNS, protocol.DONE]):
            end.reply(write_fd, reply)
        assert countdown.remaining() == 0
        assert not countdown.start_waiting()
        countdown.stop_waiting()
        assert [countdown.state(index) for index in range(3)] == [
            countdown_lib.EMPTY, countdown_lib.COLUMNS, countdown_lib.EMPTY]
        assert not testing.readable(countdown.fd) and not testing.readable(read_fd)
        # An exchange with workers 0 and 2, whose replies carry payloads.
        countdown.expect([0, 2])
        assert countdown.remaining() == 2
        assert not countdown.replied(0) and not countdown.replied(2)
        assert countdown.start_waiting()
        ends[0].reply(write_fd, protocol.encode(protocol.RESULT, 'short'))
        assert countdown.state(0) == countdown_lib.PIPED and not countdown.replied(2)
        assert not testing.readable(countdown.fd)
        assert protocol.read(read_fd) == (protocol.RESULT, 'short')
        # A reply longer than the pipe holds is counted before it is written,
        # else its writing would wait for a parent that waits for the count.
        long_reply = protocol.encode(protocol.RESULT, b'x' * (1 << 17))
        writer = threading.Thread(target=ends[2].reply, args=(write_fd, long_reply))
        writer.start()
        deadline = time.monotonic() + 10
        while not testing.readable(countdown.fd) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert testing.readable(countdown.fd)
        countdown.clear()
        countdown.stop_waiting()
        assert not testing.readable(countdown.fd)
        assert countdown.remaining() == 0 and countdown.state(2) == countdown_lib.PIPED
        assert protocol.read(read_fd) == (protocol.RESULT, b'x' * (1 << 17))
        writer.join()
    finally:
        countdown.close()
        os.close(read_fd)
        os.close(write_fd)


def test_a_countdown_lock_never_released_does_not_hang_the_parent(monkeypatch):
    # As when a worker died holding the lock: the parent still asks to be
    # woken, after a while, and its wait then sees the death.
    monkeypatch.setattr(countdown_lib.Countdown, 'LOCK_SECONDS', 0.1)
    countdown = countdown_lib.Countdown(multiprocessing.get_context('forkserver'), 1)
    try:
        countdown._lock.acquire()
        assert countdown.start_waiting()
    finally:
        countdown.close()
