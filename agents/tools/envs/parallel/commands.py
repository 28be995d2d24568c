"""The commands the parent posts to its workers in shared memory, and a worker's wait for them."""

import os
import select
import time

from agents.tools.envs import waiting
from agents.tools.envs.parallel import protocol

# Seconds a worker polls for its next command before it sleeps (see `CommandWait`).
DEFAULT_SPIN_SECONDS = 200e-6


class Commands:
    """The command each worker is to run next, posted in shared memory.

    For each worker the shared array holds the sequence number of its latest
    command, that command's kind, and whether the worker sleeps. Posting a
    command writes its kind and increments the sequence number, which a
    polling worker watches: a step seen there costs neither process a system
    call. A command with a payload is also written to the worker's pipe, after
    it is posted. A worker that stops polling says so under the lock, and sleeps
    on its pipe; the parent posts under the same lock, so it either sees that
    the worker sleeps, and writes `protocol.WAKE` to its pipe, or the worker sees the
    command before it sleeps.
    """

    # Offsets of a worker's entries in the shared array, and their number.
    SEQUENCE, KIND, SLEEPING, ENTRIES = 0, 1, 2, 3
    # Seconds a process waits for the lock, which the others hold for a moment.
    LOCK_SECONDS = 1.0

    def __init__(self, context, workers):
        """Post commands to `workers` workers."""
        self._shared = context.Array('q', self.ENTRIES * workers, lock=False)
        self._lock = context.Lock()

    def worker_end(self, index):
        """What worker `index` needs to see its commands: a `CommandsEnd`."""
        return CommandsEnd(self._shared, self._lock, self.ENTRIES * index)

    def send(self, messages):
        """Post commands; write those with a payload to the pipe, and wake sleeping workers.

        Args:
          messages: List of (worker, command, payload), where a worker has an
            `index` and a `send(command, payload=None)` that writes to its pipe.
        """
        asleep = self._post([(worker.index, command) for worker, command, _ in messages])
        for worker, command, payload in messages:
            if command in protocol.KINDS_WITH_PAYLOAD:
                worker.send(command, payload)
            elif worker.index in asleep:
                worker.send(protocol.WAKE)

    def close_workers(self, workers):
        """Post `protocol.CLOSE` to every worker, waking those that sleep.

        A polling worker sees it at once, not only when its polling ends.
        Workers that are gone are passed over.

        Args:
          workers: The `worker.Worker`s.
        """
        asleep = self._post([(worker.index, protocol.CLOSE) for worker in workers])
        for worker in workers:
            if worker.index in asleep:
                worker.request_close()

    def _post(self, commands):
        """Post commands; return the indices of the workers that sleep and need waking.

        A worker that died holding the lock keeps it: after `LOCK_SECONDS` the
        commands are posted without it, and every worker is woken.

        Args:
          commands: List of (worker index, command kind).
        """
        shared = self._shared
        for index, kind in commands:
            shared[self.ENTRIES * index + self.KIND] = kind[0]
        locked = self._lock.acquire(timeout=self.LOCK_SECONDS)
        try:
            asleep = []
            for index, _ in commands:
                entry = self.ENTRIES * index
                shared[entry + self.SEQUENCE] += 1
                if shared[entry + self.SLEEPING] or not locked:
                    shared[entry + self.SLEEPING] = 0
                    asleep.append(index)
            return asleep
        finally:
            if locked:
                self._lock.release()

    def close(self):
        """Let go of the shared array and its lock."""
        self._shared = self._lock = None


class CommandsEnd:
    """A worker's end of `Commands`."""

    def __init__(self, shared, lock, entry):
        self._shared = shared
        self._lock = lock
        self._sequence = entry + Commands.SEQUENCE
        self._kind = entry + Commands.KIND
        self._sleeping = entry + Commands.SLEEPING
        self._last = 0  # Sequence number of the last command taken.

    def posted(self):
        """Whether a command was posted that has not been taken."""
        return self._shared[self._sequence] != self._last

    def take(self):
        """The kind of the command posted last; call once `posted()`.

        Taking the lock once makes the parent's writes before it posted, such
        as the actions, visible to this process on any processor.
        """
        protocol.take_once(self._lock, Commands.LOCK_SECONDS)
        self._last = self._shared[self._sequence]
        return bytes([self._shared[self._kind]])

    def start_sleeping(self, pipe_readable):
        """Say that the worker sleeps, unless a command came; whether it may sleep.

        Args:
          pipe_readable: Zero-argument callable telling whether the command
            pipe has something to read (or has ended), asked while the lock
            stays taken: a parent that died holding it would keep it for ever,
            and its pipe would end.
        """
        while not self._lock.acquire(timeout=Commands.LOCK_SECONDS):
            if pipe_readable():
                return True
        try:
            if self.posted():
                return False
            self._shared[self._sleeping] = 1
            return True
        finally:
            self._lock.release()


class CommandWait:
    """A worker's wait for its next command: briefly polling if commands come fast.

    Polls the shared `Commands` before sleeping on the command pipe (see
    `waiting.SpinBudget`), but only while the previous wait was no longer than
    it polls: when the parent computes for long between commands (a training
    step), the worker sleeps at once and spends no CPU. It polls for
    `spin_seconds`, or as long as its last command ran if that was longer, up
    to `MAX_SPIN_FACTOR` times `spin_seconds`: the wait of the worker that
    finished first, for the other workers and the parent, grows with the time
    a command takes, and one that outlasted the polling would pay a wake-up at
    every step. Polling stops for a while when the machine is busy, seen as a
    command that got less than half of the core while the worker ran it: a
    polling process looks busy to the scheduler, which then crowds the other
    processes on the remaining cores.

    The worker calls `started` and `finished` around each command. CPU time
    costs a system call to read on some virtual machines, so only one command
    in `CPU_SAMPLE_EVERY` is checked.
    """

    CPU_SAMPLE_EVERY = 8
    MAX_SPIN_FACTOR = 4

    def __init__(self, fd, spin_seconds, commands):
        """Wait for commands.

        Args:
          fd: The command pipe's file descriptor: commands with a payload, wake-ups
            and `protocol.CLOSE` come through it, and its end means the parent is gone.
          spin_seconds: Bounds the polling (see above).
          commands: The worker's `CommandsEnd`.
        """
        self._fd = fd
        self._commands = commands
        self._poller = select.poll()
        self._poller.register(fd, select.POLLIN)
        self._spin = waiting.SpinBudget(spin_seconds)
        self._polling_seconds = spin_seconds
        self._last_wait = float('inf')
        self._wait_started = None
        self._command_started = None
        self._count = 0
        # Wall and CPU time at which the worker started a sampled command.
        self._sample = None

    def next(self):
        """Wait for the next command.

        Returns:
          Pair of the command's kind and its payload (None if it has none);
          `protocol.CLOSE` if the parent asked the worker to exit or is gone.
        """
        self._wait_started = time.perf_counter()
        seconds = self._polling_seconds
        commands = self._commands
        woken = False  # Whether the parent saw this worker sleep, and wrote `protocol.WAKE`.
        if not (self._last_wait < seconds and self._spin.spin(commands.posted, seconds=seconds)):
            while not commands.posted():
                if not commands.start_sleeping(self._pipe_readable):
                    break
                woken = True
                self._poller.poll()
                # Nothing posted: the pipe ended, or holds a `protocol.WAKE` that an
                # earlier command posted without the lock did not need.
                if not commands.posted() and self._read_kind() != protocol.WAKE:
                    return protocol.CLOSE, None
        kind = commands.take()
        if kind in protocol.KINDS_WITH_PAYLOAD:
            return self._read_command()
        if woken:
            self._read_kind()
        return kind, None

    def _pipe_readable(self):
        """Whether the pipe has something to read, or has ended, without waiting."""
        return bool(self._poller.poll(0))

    def _read_kind(self):
        """The next byte of the pipe: a message's kind; empty at its end."""
        return os.read(self._fd, 1)

    def _read_command(self):
        """Read a command from the pipe, past any `WAKE`; `CLOSE` at the pipe's end."""
        kind = self._read_kind()
        while kind == protocol.WAKE:
            kind = self._read_kind()
        try:
            return protocol.read(self._fd, kind) if kind else (protocol.CLOSE, None)
        except EOFError:
            return protocol.CLOSE, None

    def started(self):
        """Note that a command arrived and runs now."""
        now = self._command_started = time.perf_counter()
        self._last_wait = now - self._wait_started
        self._count += 1
        if self._count % self.CPU_SAMPLE_EVERY == 0:
            self._sample = now, time.thread_time()

    def finished(self):
        """Note that the command finished; back off polling if it lacked the core."""
        now = time.perf_counter()
        spin_seconds = self._spin.seconds
        self._polling_seconds = max(spin_seconds, min(
            now - self._command_started, self.MAX_SPIN_FACTOR * spin_seconds))
        if self._sample is None:
            return
        wall_start, cpu_start = self._sample
        self._sample = None
        if time.thread_time() - cpu_start < (now - wall_start) / 2:
            self._spin.back_off()
