"""Tests of the commands the parent posts to its workers, and of a worker's wait for them."""

import functools
import multiprocessing
import os
import threading
import time

import pytest

from agents.tools.envs import testing
from agents.tools.envs.parallel import commands as commands_lib
from agents.tools.envs.parallel import protocol


class _PipedWorker:
    """The parent's side of one worker's command pipe, as `Commands.send` uses it."""

    index = 0

    def __init__(self):
        self.read_fd, self.write_fd = os.pipe()

    def send(self, command, payload=None):
        os.write(self.write_fd, protocol.encode(command, payload))

    def request_close(self):
        os.write(self.write_fd, protocol.CLOSE)

    def close(self):
        for fd in (self.read_fd, self.write_fd):
            if fd is not None:
                os.close(fd)


@pytest.fixture
def command_channel():
    """A worker's `Commands` and pipe: (commands, worker handle, a `CommandWait` maker)."""
    commands = commands_lib.Commands(multiprocessing.get_context('forkserver'), 1)
    worker = _PipedWorker()
    # Every `CommandWait` made shares the one worker end, as the successive
    # waits of one worker do.
    yield commands, worker, functools.partial(
        commands_lib.CommandWait, worker.read_fd, commands=commands.worker_end(0))
    worker.close()


def _run(command_wait):
    """Wait for a command as a worker does, and run it; fail, not hang, if none comes."""
    result = []

    def wait():
        result.append(command_wait.next())
        command_wait.started()
        command_wait.finished()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    thread.join(10.0)
    assert result, 'no command arrived'
    return result[0]


def test_command_wait_returns_each_command_polling_or_sleeping(command_channel):
    commands, worker, make_command_wait = command_channel
    # A long bound: after a first, sleeping wait, every wait polls.
    command_wait = make_command_wait(spin_seconds=60.0)
    for _ in range(3):
        commands.send([(worker, protocol.STEP, None)])
        assert _run(command_wait) == (protocol.STEP, None)
    # A command posted while the worker polls, from another thread, uses no pipe.
    timer = threading.Timer(0.01, commands.send, ([(worker, protocol.STEP_SOME, None)],))
    timer.start()
    assert _run(command_wait) == (protocol.STEP_SOME, None)
    timer.join()
    assert not testing.readable(worker.read_fd)
    # A command with a payload comes through the pipe.
    commands.send([(worker, protocol.APPLY, ('name', [1, 2]))])
    assert _run(command_wait) == (protocol.APPLY, ('name', [1, 2]))
    # A sleeping worker is woken, and its wake-up byte consumed.
    sleeping = make_command_wait(spin_seconds=0.0)
    for command, payload in [(protocol.STEP, None), (protocol.RESET, ([(0, 3)], None))]:
        timer = threading.Timer(0.05, commands.send, ([(worker, command, payload)],))
        timer.start()
        assert _run(sleeping) == (command, payload)
        timer.join()
        assert not testing.readable(worker.read_fd)
    # A wake-up byte no command needed (left by a worker that died holding
    # the lock) is passed over.
    worker.send(protocol.WAKE)
    timer = threading.Timer(0.05, commands.send, ([(worker, protocol.STEP, None)],))
    timer.start()
    assert _run(sleeping) == (protocol.STEP, None)
    timer.join()
    # `CLOSE` ends the wait, seen at once by a polling worker (which would
    # otherwise look at its pipe only when its long polling ends), and so does a
    # parent that is gone.
    for wait in (command_wait, sleeping):
        commands.close_workers([worker])
        assert _run(wait) == (protocol.CLOSE, None)
        assert not testing.readable(worker.read_fd)
    os.close(worker.write_fd)
    worker.write_fd = None
    assert _run(sleeping) == (protocol.CLOSE, None)


def test_commands_are_posted_without_the_lock_of_a_worker_that_died_holding_it(
        command_channel, monkeypatch):
    commands, worker, make_command_wait = command_channel
    monkeypatch.setattr(commands_lib.Commands, 'LOCK_SECONDS', 0.05)
    command_wait = make_command_wait(spin_seconds=0.0)
    commands._lock.acquire()  # As a worker that died holding it.
    commands.send([(worker, protocol.STEP, None)])
    # Every worker is woken, as the parent cannot know which ones sleep.
    assert testing.readable(worker.read_fd)
    assert _run(command_wait) == (protocol.STEP, None)


def test_command_wait_stops_polling_after_a_command_that_got_little_of_the_core(
        command_channel, monkeypatch):
    commands, worker, make_command_wait = command_channel
    # A clock the test moves: each command takes 10 ms of wall time and the
    # given share of it as CPU time.
    clock = {'wall': 0.0, 'cpu': 0.0}
    monkeypatch.setattr(time, 'perf_counter', lambda: clock['wall'])
    monkeypatch.setattr(time, 'thread_time', lambda: clock['cpu'])
    command_wait = make_command_wait(spin_seconds=60.0)

    def run_command(core_share):
        commands.send([(worker, protocol.STEP, None)])
        command_wait.next()
        command_wait.started()
        clock['wall'] += 0.01
        clock['cpu'] += 0.01 * core_share
        command_wait.finished()

    for _ in range(2 * commands_lib.CommandWait.CPU_SAMPLE_EVERY):
        run_command(core_share=1.0)
    assert not command_wait._spin.backing_off
    # Another program holds the core while the commands run. Only sampled
    # commands are checked, so it shows within a sample's worth of them.
    for _ in range(commands_lib.CommandWait.CPU_SAMPLE_EVERY):
        run_command(core_share=0.1)
    assert command_wait._spin.backing_off


def test_command_wait_polls_as_long_as_the_last_command_ran_within_bounds(
        command_channel, monkeypatch):
    commands, worker, make_command_wait = command_channel
    clock = {'wall': 0.0}
    monkeypatch.setattr(time, 'perf_counter', lambda: clock['wall'])
    for spin_seconds, command_seconds, polling_seconds in [
            (0.1, 0.05, 0.1),  # A short command: the usual budget.
            (0.1, 0.25, 0.25),  # A longer one: as long as it ran,
            (0.1, 5.0, 0.1 * commands_lib.CommandWait.MAX_SPIN_FACTOR),  # within bounds.
            (0.0, 5.0, 0.0)]:  # No polling stays no polling.
        command_wait = make_command_wait(spin_seconds=spin_seconds)
        commands.send([(worker, protocol.STEP, None)])
        command_wait.next()
        command_wait.started()
        clock['wall'] += command_seconds
        command_wait.finished()
        assert command_wait._polling_seconds == pytest.approx(polling_seconds)
