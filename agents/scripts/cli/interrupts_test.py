"""Tests of stopping on SIGINT and SIGTERM alike."""

import os
import signal
import threading
import time

import pytest

from agents.scripts.cli import interrupts
from agents.tools.envs import errors
from agents.tools.envs import waiting


@pytest.fixture(autouse=True)
def unhandled_stop_signals():
    """SIGINT and SIGTERM as a plain program has them; a test runner may handle SIGTERM."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _wait_for_signal():
    # The handler runs in the main thread between bytecodes, soon after the kill.
    for _ in range(1000):
        time.sleep(0.001)


@pytest.mark.parametrize('signum, name, code', [
    (signal.SIGTERM, 'SIGTERM', 143), (signal.SIGINT, 'SIGINT', 130)])
def test_a_signal_raises_interrupted_with_the_conventional_exit_code(signum, name, code):
    with pytest.raises(interrupts.Interrupted) as stop:
        with interrupts.raised_on():
            os.kill(os.getpid(), signum)
            _wait_for_signal()
    assert isinstance(stop.value, KeyboardInterrupt)
    assert stop.value.signal.name == name and stop.value.exit_code == code


def test_later_signals_do_not_interrupt_the_cleanup():
    cleaned_up = False
    with pytest.raises(interrupts.Interrupted):
        with interrupts.raised_on():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_signal()
            finally:
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_signal()
                cleaned_up = True
    assert cleaned_up


def test_previous_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    with interrupts.raised_on():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_within_deferred_is_raised_when_it_ends():
    finished = False
    with pytest.raises(interrupts.Interrupted) as stop:
        with interrupts.raised_on():
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_signal()
                finished = True
    assert finished and stop.value.signal.name == 'SIGTERM'
    with interrupts.raised_on():
        with interrupts.deferred():
            pass  # Nothing held back, nothing raised.


def test_handlers_of_the_program_and_an_enclosing_context_are_kept():
    received = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)  # As in a background job.
    try:
        with pytest.raises(interrupts.Interrupted) as stop:
            with interrupts.raised_on():
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_signal()
                assert received == [signal.SIGTERM]
                os.kill(os.getpid(), signal.SIGINT)
                _wait_for_signal()
        assert stop.value.signal.name == 'SIGINT'
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    with pytest.raises(interrupts.Interrupted) as stop:
        with interrupts.raised_on():
            with interrupts.raised_on():  # Such as train() called by the command line.
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_signal()
    assert stop.value.signal.name == 'SIGTERM'
    assert interrupts.received_signal() == signal.SIGTERM


def test_outside_the_main_thread_nothing_changes():
    handlers = []

    def enter():
        with interrupts.raised_on():
            handlers.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert handlers == [signal.getsignal(signal.SIGTERM)]


def _wait_in_another_thread(seconds):
    """Wait on an idle pipe in another thread, as workers are waited for; return the outcome."""
    read_fd, write_fd = os.pipe()
    outcome = []

    def wait():
        try:
            outcome.append(waiting.Waiter([read_fd]).wait(time.monotonic() + seconds, 'a pipe'))
        except errors.WaitInterrupted as error:
            outcome.append(error)

    thread = threading.Thread(target=wait)
    thread.start()
    thread.join(30)
    os.close(read_fd)
    os.close(write_fd)
    return outcome[0]


def test_a_signal_held_back_stops_waits_for_workers_within_deferred():
    # session.run waits for workers in another thread: a signal held back just
    # before must stop that wait, or the run would wait for a hung env for ever.
    waiting.watch_signals()
    outcome = []
    with pytest.raises(interrupts.Interrupted):
        with interrupts.raised_on():
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                _wait_for_signal()
                outcome.append(_wait_in_another_thread(5))
    assert isinstance(outcome[0], errors.WaitInterrupted)


def test_a_signal_raised_at_once_does_not_stop_the_waits_of_the_cleanup():
    waiting.watch_signals()
    with pytest.raises(interrupts.Interrupted):
        with interrupts.raised_on():
            os.kill(os.getpid(), signal.SIGTERM)
            _wait_for_signal()
    assert _wait_in_another_thread(0.05) == []
