"""Tests of waiting for workers: deadlines and Ctrl-C in any thread."""

import os
import select
import signal
import threading
import time

import pytest

from agents.tools.envs import errors
from agents.tools.envs import waiting


@pytest.fixture
def pipe():
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    os.close(read_fd)
    os.close(write_fd)


@pytest.fixture
def recorded_sigint():
    """SIGINT is recorded instead of raising, as in a program that handles it itself."""
    waiting.watch_signals()
    received = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    yield received
    signal.signal(signal.SIGINT, previous)
    waiting.discard_signals()


# Waits that sleep at once, and waits that poll (for longer than the test) first.
_SPINS = [None, 60.0]


@pytest.mark.parametrize('spin_seconds', _SPINS)
def test_returns_the_readable_descriptors_or_nothing_at_the_deadline(pipe, spin_seconds):
    read_fd, write_fd = pipe
    waiter = waiting.Waiter([read_fd])
    spin = spin_seconds and waiting.SpinBudget(spin_seconds)
    assert waiter.wait(time.monotonic() + 0.05, 'nothing', spin) == []
    os.write(write_fd, b'x')
    assert waiter.wait(None, 'a byte', spin) == [read_fd]
    os.read(read_fd, 1)
    timer = threading.Timer(0.01, os.write, (write_fd, b'x'))
    timer.start()
    assert waiter.wait(None, 'a byte written while waiting', spin) == [read_fd]
    timer.join()


@pytest.mark.parametrize('spin_seconds', _SPINS)
def test_signal_during_a_wait_in_another_thread_interrupts_it(
        pipe, recorded_sigint, spin_seconds):
    waiter = waiting.Waiter([pipe[0]])
    outcome = []

    def wait():
        try:
            waiter.wait(
                time.monotonic() + 30, 'the pipe',
                spin_seconds and waiting.SpinBudget(spin_seconds))
        except errors.WaitInterrupted as error:
            outcome.append(error)

    thread = threading.Thread(target=wait)
    thread.start()
    while thread.is_alive():
        os.kill(os.getpid(), signal.SIGINT)
        thread.join(0.2)
    assert recorded_sigint  # The main thread's handler ran as well.
    assert isinstance(outcome[0], errors.WaitInterrupted)
    assert isinstance(outcome[0], KeyboardInterrupt)
    assert str(outcome[0]) == 'SIGINT interrupted waiting for the pipe.'


class _CountingPoller:
    """A `select.poll` stand-in that never has events and counts the polls."""

    def __init__(self):
        self.polls = 0

    def poll(self, timeout=None):
        self.polls += 1
        return []


def test_polling_stops_for_a_while_after_a_yield_lost_the_core(monkeypatch):
    # Another process keeps the core for longer than the budget at every yield.
    monkeypatch.setattr(os, 'sched_yield', lambda: time.sleep(0.01))
    spin = waiting.SpinBudget(0.001)
    poller = _CountingPoller()
    assert not spin.backing_off
    assert spin.poll(poller) == [] and poller.polls == 1
    assert spin.backing_off
    for _ in range(waiting.SpinBudget.MIN_BACKOFF_WAITS):
        assert spin.poll(poller) == []
    assert poller.polls == 1  # Sleeping at once meanwhile,
    assert spin.poll(poller) == [] and poller.polls == 2  # and polling again after.


class _ReadyPoller(_CountingPoller):
    """A poller that always has an event, so a wait that polls returns at once."""

    def poll(self, timeout=None):
        super().poll(timeout)
        return [(0, select.POLLIN)]


def _waits_without_polling(spin):
    """How many waits in a row sleep at once from now on."""
    poller = _ReadyPoller()
    waits = 0
    while not spin.poll(poller):
        waits += 1
    return waits


def test_polling_stops_for_longer_while_the_core_is_lost_again_and_again():
    spin = waiting.SpinBudget(60.0)
    pauses = []
    for _ in range(12):  # Each time polling resumes, a sign of a busy machine.
        spin.back_off()
        pauses.append(_waits_without_polling(spin))
    minimum, maximum = waiting.SpinBudget.MIN_BACKOFF_WAITS, waiting.SpinBudget.MAX_BACKOFF_WAITS
    assert pauses[:3] == [minimum, 2 * minimum, 4 * minimum]
    assert pauses[-1] == maximum
    # After as many calm waits as the pause, a stray sign pauses polling briefly again.
    for _ in range(maximum):
        assert spin.poll(_ReadyPoller())
    spin.back_off()
    assert _waits_without_polling(spin) == minimum


def test_one_wait_can_poll_for_another_budget(pipe):
    poller = select.poll()
    poller.register(pipe[0], select.POLLIN)
    spin = waiting.SpinBudget(60.0)
    start = time.monotonic()
    # Nothing comes: polls 20 ms, not 60 s.
    assert spin.spin(lambda: poller.poll(0), seconds=0.02) is None
    assert time.monotonic() - start < 10


def test_giving_way_yields_the_core_once_unless_polling_is_off(monkeypatch):
    yields = []
    monkeypatch.setattr(os, 'sched_yield', lambda: yields.append(1))
    spin = waiting.SpinBudget(60.0)
    spin.give_way()
    assert len(yields) == 1
    spin.back_off()  # Other programs want the cores: keep the core instead.
    spin.give_way()
    waiting.SpinBudget(0.0).give_way()  # Polling never wanted.
    assert len(yields) == 1


def test_signals_before_a_wait_are_left_to_their_handlers(pipe, recorded_sigint):
    os.kill(os.getpid(), signal.SIGINT)
    assert recorded_sigint
    waiter = waiting.Waiter([pipe[0]])
    assert waiter.wait(time.monotonic() + 0.05, 'the pipe') == []


def _wait_in_thread(waiter, deadline):
    """Wait in another thread, as a TensorFlow numpy_function does; return what happened."""
    outcome = []

    def wait():
        try:
            outcome.append(waiter.wait(deadline, 'the pipe'))
        except errors.WaitInterrupted as error:
            outcome.append(error)

    thread = threading.Thread(target=wait)
    thread.start()
    thread.join(30)
    return outcome[0]


def test_signal_just_before_a_wait_in_another_thread_stops_it(pipe, recorded_sigint):
    # The main thread may be stuck in C code (session.run) and unable to handle
    # it: the wait must not lose a signal sent after its request went out.
    os.kill(os.getpid(), signal.SIGINT)
    waiter = waiting.Waiter([pipe[0]])
    outcome = _wait_in_thread(waiter, time.monotonic() + 30)
    assert isinstance(outcome, errors.WaitInterrupted)


def test_discarded_signals_do_not_stop_waits_in_other_threads(pipe, recorded_sigint):
    os.kill(os.getpid(), signal.SIGINT)
    assert recorded_sigint
    waiting.discard_signals()  # As a program that handled it and carries on.
    waiter = waiting.Waiter([pipe[0]])
    assert _wait_in_thread(waiter, time.monotonic() + 0.05) == []
