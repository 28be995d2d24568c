"""Stop a run alike on Ctrl-C (SIGINT) and on SIGTERM, as schedulers send it."""

import contextlib
import signal

from absl import logging


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


@contextlib.contextmanager
def raised_on(signals=(signal.SIGINT, signal.SIGTERM)):
    """Within the context, the first of these signals raises `Interrupted` in the main thread.

    Later signals are logged and ignored, so that cleaning up (storing a
    checkpoint, closing worker processes) can finish; a process that must stop
    at once can still be killed with SIGKILL. The previous handlers come back
    when the context ends.

    Args:
      signals: The signals to handle.

    Yields:
      Nothing.
    """
    received = []

    def handle(signum, unused_frame):
        if received:
            logging.warning('Received %s while stopping; still cleaning up.',
                            signal.Signals(signum).name)
            return
        received.append(signum)
        raise Interrupted(signum)

    previous = {signum: signal.signal(signum, handle) for signum in signals}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
