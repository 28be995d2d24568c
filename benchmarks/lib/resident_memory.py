"""The resident memory of a run: this process and every process it started (Linux).

A training run's environments live in worker processes, so its memory is
the whole process tree's. `learning.py` records it at every evaluation,
`mujoco_throughput.py` and `process_memory.py` sample it throughout.
"""

import os
import threading
import time


def resident_megabytes():
    """Resident memory (RSS) of this process and every process it started, in MiB.

    Worker processes hold the environments, so their memory counts as the
    run's. Read from /proc; None where there is none (not Linux).
    """
    if not os.path.exists('/proc/self/statm'):
        return None
    total = 0
    for pid in process_tree():
        try:  # A process may end while it is counted; it then counts nothing.
            with open(f'/proc/{pid}/statm') as file_:
                total += int(file_.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 2**20


def status_field(pid, field):
    """A number of `/proc/<pid>/status` (Linux): VmRSS and VmHWM in KiB, PPid, ...

    Raises:
      FileNotFoundError, ProcessLookupError: If the process is gone.
      StopIteration: If the field is missing, as for a zombie's memory.
    """
    with open(f'/proc/{pid}/status') as file_:
        return next(int(line.split()[1]) for line in file_ if line.startswith(field + ':'))


def command_line(pid):
    """The command line of a process, its arguments joined by spaces (Linux)."""
    with open(f'/proc/{pid}/cmdline') as file_:
        return file_.read().replace('\0', ' ')


class MemorySampler:
    """Within the context, samples the resident memory of this process and those it started.

    Every `every` seconds it records this process's and the whole tree's
    resident memory, and each process's high-water mark (VmHWM). The sum of
    the marks bounds the peak of the whole tree from above, transients between
    samples included.

    Attributes:
      samples: List of (seconds since the start, this process's MiB, the tree's MiB).
      marks: Dict from process id to (its description, its high-water mark in MiB).
    """

    def __init__(self, every=0.5, describe=lambda pid: ''):
        self.samples, self.marks = [], {}
        self._every = every
        self._describe = describe
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @property
    def peak_megabytes(self):
        """The sum of each process's high-water mark, in MiB."""
        return sum(mark for _, mark in self.marks.values())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *unused_exception):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        start = time.perf_counter()
        own_command = command_line(os.getpid())
        while not self._stop.is_set():
            tree = 0.0
            for pid in process_tree():
                try:  # A process may end while it is read; it then counts nothing.
                    if pid != os.getpid() and command_line(pid) == own_command:
                        continue  # Forked to run another program: its pages are this one's.
                    tree += status_field(pid, 'VmRSS') / 1024
                    self.marks[pid] = (self._describe(pid), status_field(pid, 'VmHWM') / 1024)
                except (FileNotFoundError, ProcessLookupError, StopIteration):
                    continue
            own = status_field(os.getpid(), 'VmRSS') / 1024
            self.samples.append((time.perf_counter() - start, own, tree))
            self._stop.wait(self._every)


def process_tree():
    """The ids of this process and of every process it started, read from /proc (Linux)."""
    pids, pending = [], [os.getpid()]
    while pending:
        pid = pending.pop()
        pids.append(pid)
        try:
            for thread in os.listdir(f'/proc/{pid}/task'):
                with open(f'/proc/{pid}/task/{thread}/children') as file_:
                    pending.extend(int(child) for child in file_.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return pids
