"""The count of the replies an exchange with the workers still awaits, in shared memory."""

import os
import select

from agents.tools.envs.parallel import protocol

# States of a worker's reply to an exchange, in the `Countdown`'s shared array:
# none yet, nothing to read, infos in the columns, or a message in the pipe.
PENDING, EMPTY, COLUMNS, PIPED = 0, 1, 2, 3


class Countdown:
    """The replies an exchange still awaits, in shared memory; the last one wakes a waiting parent.

    For each worker the shared array holds the state of its reply: pending,
    empty (a command that returns nothing, such as a step without infos),
    with the step's infos in the info columns, or waiting in the worker's pipe
    (a reply with a payload). Only the last costs a pipe; for the others the
    worker only marks and counts its reply. The count and
    the states change under a lock, so exactly one worker sees the count reach
    zero; that worker writes one byte to a pipe the parent sleeps on, but only
    if the parent said it waits. A parent that finds every reply in when it
    looks makes no system call to collect them.
    """

    # Indices of the count and the parent's waiting flag in the shared array,
    # whose remaining entries are the workers' reply states.
    _REMAINING, _WAITING, _STATES = 0, 1, 2
    # Seconds the parent waits for the lock, which workers hold for a moment.
    LOCK_SECONDS = 1.0

    def __init__(self, context, workers):
        """Await one reply from each of `workers` workers: that which each sends when started."""
        self._shared = context.Array('q', [workers, 0] + [PENDING] * workers, lock=False)
        self._lock = context.Lock()
        self._reader, self._writer = context.Pipe(duplex=False)
        self.fd = self._reader.fileno()

    def worker_end(self, index):
        """What worker `index` needs to count its replies: a `CountdownEnd`."""
        return CountdownEnd(self._shared, self._lock, self._writer, self._STATES + index)

    def started(self):
        """Drop the parent's copy of the workers' end once they all have theirs."""
        self._writer.close()

    def expect(self, indices):
        """Await a reply from each worker in `indices`; call before sending the commands."""
        for index in indices:
            self._shared[self._STATES + index] = PENDING
        self._shared[self._REMAINING] = len(indices)

    def remaining(self):
        """How many replies are still awaited."""
        return self._shared[self._REMAINING]

    def synchronize(self):
        """Make the results the workers wrote before their replies visible here, on any processor.

        Call after finding every reply in without waiting: each worker counted its
        reply under the lock, and taking it once orders its writes before this
        process's reads (a wait orders them through the wake-up byte).
        """
        protocol.take_once(self._lock, self.LOCK_SECONDS)

    def start_waiting(self):
        """Ask for a wake-up byte from the last reply; False if every reply is in already.

        The flag is set and the count read under the lock, so the last worker
        either sees the flag or has been counted here. A worker that died
        holding the lock keeps it: after `LOCK_SECONDS` the flag is set
        without it, and the wait that follows sees the death.
        """
        locked = self._lock.acquire(timeout=self.LOCK_SECONDS)
        try:
            self._shared[self._WAITING] = 1
            return not locked or self._shared[self._REMAINING] > 0
        finally:
            if locked:
                self._lock.release()

    def stop_waiting(self):
        """Take back `start_waiting`; call once its byte, if any, was consumed."""
        self._shared[self._WAITING] = 0

    def clear(self):
        """Consume the wake-up byte of the last reply."""
        os.read(self.fd, 1)

    def replied(self, index):
        """Whether worker `index` replied to the exchange."""
        return self._shared[self._STATES + index] != PENDING

    def state(self, index):
        """The state of worker `index`'s reply: `PENDING`, `EMPTY`, `COLUMNS` or `PIPED`."""
        return self._shared[self._STATES + index]

    def close(self):
        """Close the parent's ends of the pipe; let go of the shared array and its lock.

        The lock is a named semaphore (a file in /dev/shm on Linux), removed
        once no process holds it.
        """
        self._writer.close()
        self._reader.close()
        self._shared = self._lock = None


class CountdownEnd:
    """A worker's end of the `Countdown`."""

    def __init__(self, shared, lock, writer, state_index):
        self._shared = shared
        self._lock = lock
        self._writer = writer
        self._state_index = state_index

    def reply(self, fd, data):
        """Reply with the encoded message `data`, writing it to the file descriptor `fd` if needed.

        An empty reply, or one whose infos are in the columns, is only counted
        (with its state). A reply that fits the pipe at once is
        written first. A longer one is counted first: its writing waits for the
        parent to read, which it does once it sees the count reach zero.
        """
        if data == protocol.DONE:
            self._count_one(EMPTY)
        elif data == protocol.INFOS_IN_COLUMNS:
            self._count_one(COLUMNS)
        elif len(data) <= select.PIPE_BUF:
            protocol.write(fd, data)
            self._count_one(PIPED)
        else:
            self._count_one(PIPED)
            protocol.write(fd, data)

    def _count_one(self, state):
        """Set this worker's reply state and count the reply; wake a waiting parent if last."""
        shared = self._shared
        with self._lock:
            shared[self._state_index] = state
            shared[Countdown._REMAINING] -= 1
            wake = shared[Countdown._REMAINING] == 0 and shared[Countdown._WAITING]
        if wake:
            os.write(self._writer.fileno(), protocol.DONE)
