"""Stop a run alike on Ctrl-C (SIGINT) and on SIGTERM, as schedulers send it.

Within `raised_on()`, the first of these signals raises `Interrupted` in the
main thread, so the run stores a checkpoint and cleans up as for Ctrl-C. Code
that must not be cut short, such as TensorFlow's own Python code around a
`session.run`, runs within `deferred()`: a signal arriving there is held back
and raised when that code is done.
"""

import contextlib
import signal
import threading

from absl import logging

from agents.tools.envs import waiting

# What `signal.getsignal` returns for a signal that no Python code of the
# program handles: the default action, ignored, Python's KeyboardInterrupt for
# SIGINT, or a handler set outside Python.
_UNHANDLED = (signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler, None)


class Interrupted(KeyboardInterrupt):
    """The process received a signal that asks it to stop.

    A subclass of KeyboardInterrupt, so code that cleans up after Ctrl-C (such
    as storing a checkpoint) does the same for SIGTERM.
    """

    def __init__(self, signum):
        self.signal = signal.Signals(signum)
        super().__init__(self.signal.name)

    @property
    def exit_code(self):
        """The conventional exit code of a process stopped by the signal: 128 + its number."""
        return 128 + self.signal.value


class _State:
    """What the handler of `raised_on` knows: the signals received and held back."""

    received = []  # Signals received within `raised_on`, the first one stops the run.
    held_back = []  # The first signal, while `deferred()` held it back.
    deferring = 0  # Depth of nested `deferred()` contexts.


def _handle(signum, unused_frame):
    if _State.received:
        logging.warning('Received %s while stopping; still cleaning up.',
                        signal.Signals(signum).name)
        return
    _State.received.append(signal.Signals(signum))
    if _State.deferring:
        # Kept for waits for workers inside the deferred code as well, which
        # then stop instead of waiting on (see `waiting`).
        _State.held_back.append(signum)
        return
    waiting.discard_signals()  # Handled here: cleaning up waits for workers.
    raise Interrupted(signum)


@contextlib.contextmanager
def raised_on(signals=(signal.SIGINT, signal.SIGTERM)):
    """Within the context, the first of these signals raises `Interrupted` in the main thread.

    Later signals are logged and ignored, so that cleaning up (storing a
    checkpoint, closing worker processes) can finish; a process that must stop
    at once can still be killed with SIGKILL. The previous handlers come back
    when the context ends.

    A signal that the program handles with a Python function of its own, or
    that an enclosing `raised_on` handles, keeps its handler. Ignored signals
    are taken, so a run started in the background by a shell, which ignores
    SIGINT there, still stops on `kill -INT`. Outside the main thread, where
    Python cannot set handlers, the context does nothing.

    Args:
      signals: The signals to handle.

    Yields:
      Nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        signum: signal.getsignal(signum) for signum in signals
        if signal.getsignal(signum) in _UNHANDLED}
    if previous and _handle not in map(signal.getsignal, signals):
        _State.received, _State.held_back = [], []  # A new run of the program.
    for signum in previous:
        signal.signal(signum, _handle)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def deferred():
    """Within the context, a stopping signal is held back and raised when it ends.

    The context ends by raising `Interrupted` if a signal arrived within it,
    also when its code raised an exception (which becomes the context of the
    interruption).

    Yields:
      Nothing.
    """
    _State.deferring += 1
    try:
        yield
    finally:
        _State.deferring -= 1
        if not _State.deferring and _State.held_back:
            raise Interrupted(_State.held_back.pop())


def received_signal():
    """The first signal received within `raised_on`, or None."""
    return _State.received[0] if _State.received else None
