"""Tests of stopping on SIGINT and SIGTERM alike."""

import os
import signal
import time

import pytest

from agents.scripts import interrupts


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
