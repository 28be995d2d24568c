"""Waiting for workers: with a deadline, in any thread, stopped by Ctrl-C.

Python runs signal handlers in the main thread only, between bytecodes. While
the main thread is inside a long C call, such as a TensorFlow `session.run`
whose `numpy_function` waits for an environment worker in another thread, no
handler runs, so Ctrl-C would wait as long as the worker. The C-level signal
handler also writes the number of the signal to the process's signal wakeup
file descriptor (`signal.set_wakeup_fd`) at once, whatever the threads do.
Waits here watch that descriptor beside the workers' pipes, so Ctrl-C
(SIGINT) or SIGTERM arriving during a wait raises `errors.WaitInterrupted` in
the waiting thread within milliseconds.

A signal that arrived before a wait began is left to its handler when the wait
runs in the main thread, where Python has run that handler already. A wait in
another thread stops on it as well: the main thread may be inside a long C call
that keeps the handler from running, and a signal sent just before the wait
began (between sending a request to a worker and waiting for its answer) must
not be lost. A program that handles a stopping signal in the main thread and
carries on calls `discard_signals()`, so that its next wait in another thread
does not stop on it.

`watch_signals()`, which every process backend calls when it starts, sets the
wakeup descriptor, from the main thread, unless the program already uses it
(asyncio does); then only waits in the main thread stop, through the handler.
"""

import os
import select
import signal
import threading
import time

from agents.tools.envs import errors

# Signals that stop a wait; the wakeup descriptor receives others too.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_lock = threading.Lock()
_signal_fd = None  # Read end of the pipe whose write end is the wakeup descriptor.


def watch_signals():
    """Let waits in any thread see Ctrl-C and SIGTERM; effective in the main thread.

    Does nothing outside the main thread, after the first call, or when the
    program already uses the signal wakeup descriptor.
    """
    global _signal_fd
    with _lock:
        if _signal_fd is not None or threading.current_thread() is not threading.main_thread():
            return
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        if previous != -1:  # The program's own; leave it in place.
            signal.set_wakeup_fd(previous)
            os.close(read_fd)
            os.close(write_fd)
            return
        _signal_fd = read_fd


class Waiter:
    """Waits until some of a set of file descriptors are readable, or a deadline.

    Ctrl-C and SIGTERM arriving during the wait stop it (see the module
    docstring). Not thread-safe: one thread waits at a time.
    """

    def __init__(self, fds):
        """Watch file descriptors.

        Args:
          fds: File descriptors (or objects with `fileno()`) to wait for.
        """
        self._poller = select.poll()
        for fd in fds:
            self._poller.register(fd, select.POLLIN)
        self._signal_fd = _signal_fd
        if self._signal_fd is not None:
            self._poller.register(self._signal_fd, select.POLLIN)

    def wait(self, deadline, description, spin=None):
        """Wait until some file descriptors are readable or the deadline passes.

        Args:
          deadline: `time.monotonic()` time to give up at, or None to wait for ever.
          description: What is waited for, for the message of an interruption.
          spin: Optional `SpinBudget` to poll with before sleeping, so that an
            answer expected soon is seen without the cost of waking up.

        Raises:
          errors.WaitInterrupted: If Ctrl-C or SIGTERM arrives while waiting.

        Returns:
          List of the readable file descriptors (those of dead processes
          included); empty if the deadline passed.
        """
        discard_handled_signals()
        events = spin.poll(self._poller, deadline) if spin else []
        while True:
            if not events:
                events = self._poller.poll(
                    None if deadline is None else max(0.0, deadline - time.monotonic()) * 1000)
            ready = [fd for fd, _ in events if fd != self._signal_fd]
            if len(ready) < len(events):
                raise_if_interrupted(description)
            if ready or (deadline is not None and time.monotonic() >= deadline):
                return ready
            events = []


class SpinBudget:
    """How long a process polls before it sleeps, and when it had better not.

    Polling saves the wake-up of a sleeping process when the answer comes
    soon, but pays only while the core is otherwise idle: each poll yields the
    core to any other process that wants it, and one that takes it may keep it
    for a whole time slice, while a sleeping process would have been woken at
    once. So when a yield lost the core for longer than the whole budget, or
    the process tells of other signs of a busy machine (`back_off`), polling
    stops for a number of waits.

    That number starts small and doubles with each sign that comes soon after
    the last, up to `MAX_BACKOFF_WAITS`, and falls back once polling has gone
    well for as many waits. An idle machine still shows a sign now and then (a
    timer or a daemon takes the core for a moment); a fixed long pause after
    each kept the workers of `ParallelBatchEnv` from polling most of the time
    (benchmarks/results/env_throughput/env_throughput.md). A machine whose cores other
    programs want shows signs at most waits, and polling stays off.
    """

    MIN_BACKOFF_WAITS = 8
    MAX_BACKOFF_WAITS = 1000

    def __init__(self, seconds):
        """Poll for up to `seconds` per wait."""
        self.seconds = seconds
        self._waits_without_polling = 0
        self._backoff_waits = self.MIN_BACKOFF_WAITS
        # Waits that polled since the last sign of a busy machine.
        self._calm_waits = self.MAX_BACKOFF_WAITS

    def poll(self, poller, deadline=None):
        """Poll a `select.poll` object until it has events or the budget is spent.

        Args:
          poller: The `select.poll` object.
          deadline: Optional `time.monotonic()` time to stop at in any case.

        Returns:
          The poller's events; empty if there were none in the budget.
        """
        return self.spin(lambda: poller.poll(0), deadline) or []

    def spin(self, check, deadline=None, seconds=None):
        """Call `check` until it returns something true or the budget is spent.

        Args:
          check: Zero-argument callable.
          deadline: Optional `time.monotonic()` time to stop at in any case.
          seconds: This wait's budget, if not the usual `seconds`.

        Returns:
          The first true result of `check`; None if there was none in the budget.
        """
        if self._waits_without_polling:
            self._waits_without_polling -= 1
            return None
        self._calm_waits += 1
        seconds = self.seconds if seconds is None else seconds
        now = time.monotonic()
        end = now + seconds if deadline is None else min(now + seconds, deadline)
        while now < end:
            result = check()
            if result:
                return result
            os.sched_yield()
            before, now = now, time.monotonic()
            if now - before > seconds:
                self.back_off()
                break
        return None

    def give_way(self):
        """Yield the core once, unless polling is off (see `back_off`).

        A process that has just handed work to another process that may share
        its core lets that one start at once, instead of only after its own way
        into a sleeping wait.
        """
        if self.seconds and not self._waits_without_polling:
            os.sched_yield()

    @property
    def backing_off(self):
        """Whether the next wait sleeps at once because other programs want the cores."""
        return self._waits_without_polling > 0

    def back_off(self):
        """Sleep at once in the next waits: other programs want the cores."""
        if self._calm_waits <= self._backoff_waits:  # Soon after the last sign.
            self._backoff_waits = min(2 * self._backoff_waits, self.MAX_BACKOFF_WAITS)
        else:
            self._backoff_waits = self.MIN_BACKOFF_WAITS
        self._waits_without_polling = self._backoff_waits
        self._calm_waits = 0


def discard_signals():
    """Forget the signals received so far; a wait reacts only to later ones."""
    _read_signals()


def discard_handled_signals():
    """Forget the signals received so far if their handlers have run (see the module docstring).

    In the main thread Python has run the handlers of earlier signals before
    this call, so those signals are forgotten; in other threads they are kept,
    and the next check raises on them.
    """
    if threading.current_thread() is threading.main_thread():
        discard_signals()


def raise_if_interrupted(description):
    """Raise if Ctrl-C or SIGTERM arrived since the last check.

    Args:
      description: What is waited for, for the message.

    Raises:
      errors.WaitInterrupted: If a stopping signal arrived.
    """
    stop = _read_signals()
    if stop:
        raise errors.WaitInterrupted(f'{stop[0].name} interrupted waiting for {description}.')


def _read_signals():
    """Read the signals received so far from the wakeup pipe; return the stopping ones."""
    if _signal_fd is None:
        return []
    received = b''
    try:
        while chunk := os.read(_signal_fd, 512):
            received += chunk
    except BlockingIOError:
        pass
    return [signal.Signals(number) for number in received if number in _STOP_SIGNALS]
