"""Step many environments in a few worker processes that share memory with the parent.

The `process` backend runs one environment per process and pays a pipe round
trip with pickled arrays for every environment and step; for cheap
environments that overhead dominates. `ParallelBatchEnv` instead spreads the
environments over a few workers (by default one per core), each stepping its
share in a tight loop; optionally the parent steps a share itself instead of
waiting. Actions, observations, rewards and flags live in one shared-memory
block, and so do the commands (see `_Commands`): a step is posted there, and a
worker that polls for it sees it without a system call on either side. Only a
sleeping worker is woken with a byte through its pipe, and only commands with a
payload (resets, calls of environment methods) travel through it. A reply goes
through the worker's pipe only when it carries something shared memory does
not (infos off the schema of the info columns, an error); otherwise the
worker only marks and counts it in shared memory (see `_Countdown` and
`info_columns`). A step of some environments marks them in shared memory too and
goes only to the workers that host any of them.

Waking a sleeping process costs tens of microseconds on a virtual machine,
whose idle cores halt, as much as stepping a few cheap environments. So a
worker whose commands have been coming quickly polls for the next one for a
short, bounded time after replying before it sleeps: when the parent steps
again in that time, no wake-up is paid. A worker says under a lock that it
sleeps, and the parent posts under the same lock, so no command is missed
whichever way the worker waits. On a machine where other programs want the
cores, polling would cost more than it saves, and workers stop polling for a
while (see `_CommandWait` and `waiting.SpinBudget`).

With the commands sent, the parent yields its core once, so that a worker
sharing that core starts at once rather than after the parent's own way into
a wait; then it looks at the count of replies. It waits only for replies still
missing: polling while fewer are missing than there are cores, so that a core
is free for it, and otherwise sleeping until the worker that replies last
wakes it. Woken by each reply, it would take the core of a worker still
stepping: with as many workers as cores, that delayed the batch step by tens
of microseconds. The parent's part of a batch step (about 50 microseconds of
the 250 a step of 32 Pendulum environments takes) is not shared with any
worker, so every system call kept out of it counts (see
benchmarks/results/parallel_timeline.md).
"""

import copyreg
import functools
import io
import multiprocessing
import os
import pickle
import select
import signal
import struct
import time
import weakref

import cloudpickle
import numpy as np

from agents.tools.envs import access
from agents.tools.envs import batching
from agents.tools.envs import contract
from agents.tools.envs import errors
from agents.tools.envs import info_columns
from agents.tools.envs import shared_arrays
from agents.tools.envs import waiting

# Commands from the parent to a worker, one byte each, posted in `_Commands`.
# _STEP steps all of the worker's environments and _STEP_SOME those marked in
# the shared `stepping` array; neither has a payload nor uses the pipe, because
# the actions are in shared memory too. Nor has _CLOSE, which a sleeping worker
# also finds in its pipe.
_STEP = b's'
_STEP_SOME = b'p'
_RESET = b'r'
_APPLY = b'f'
_ATTACH = b'a'
_ATTACH_INFOS = b'i'
_CLOSE = b'x'
# Wakes a worker that sleeps on its pipe for a command posted in shared memory.
_WAKE = b'w'
# Seconds a worker polls for its next command before it sleeps (see `_CommandWait`).
DEFAULT_SPIN_SECONDS = 200e-6
# Replies from a worker, one byte each, optionally followed by a payload.
_DONE = b'.'
_RESULT = b'+'
_FAILURE = b'!'
_KINDS_WITH_PAYLOAD = (_RESET, _APPLY, _ATTACH, _ATTACH_INFOS, _RESULT, _FAILURE)
# The reply to a step whose infos the worker wrote to the `InfoColumns`; never
# sent through the pipe.
_INFOS_IN_COLUMNS = b'c'
# States of a worker's reply to an exchange, in the `_Countdown`'s shared array:
# none yet, nothing to read, infos in the columns, or a message in the pipe.
_PENDING, _EMPTY, _COLUMNS, _PIPED = 0, 1, 2, 3
_LENGTH = struct.Struct('<I')
_READ_SIZE = 1 << 16


class ParallelBatchEnv(contract.BaseBatchEnv):
    """The `parallel` backend: environments spread over a few worker processes.

    Follows the contract of `contract.BaseBatchEnv`. `batch[i].name` reads an
    attribute of environment `i` from its process.

    Finished episodes are reset without an extra round trip: right after a step
    in which an environment terminated or was truncated, its process resets it
    and keeps the first observation of the next episode, which the next
    `reset(indices)` returns. Callers see exactly what stepping and then
    resetting would give: `step` returns the last observation of the episode and
    `reset` the first of the next. An environment stepped again without a reset
    continues in the already started next episode.

    An exception in an environment is raised once all workers have answered.
    A timeout names the environments the worker was stepping when it hung.
    `close()` also runs when the object is garbage collected or the interpreter
    exits, and workers exit when their parent dies. Not thread-safe.
    """

    def __init__(
            self, constructors, num_workers=None, step_in_parent=None, seeds=None,
            auto_reset=True, return_infos=True, start_method='forkserver',
            timeout=contract.DEFAULT_TIMEOUT, spin_seconds=DEFAULT_SPIN_SECONDS):
        """Start the worker processes and build their environments.

        Args:
          constructors: Zero-argument callables, one per environment, each
            returning a Gymnasium environment; sent to the workers with cloudpickle.
          num_workers: Number of worker processes; by default one per core (one
            per core but one when `step_in_parent`). Never more than there are
            environments for the workers to step.
          step_in_parent: Let the parent step a share of the environments while it
            would otherwise wait for the workers, so that every core steps
            environments. This saves a process and a wake-up per step and measured
            fastest on an idle machine (see benchmarks/env_throughput.py); False
            keeps all environments out of the parent process, which isolates
            their crashes and measured faster on a machine whose cores are busy
            with other work. The timeout cannot stop an environment that hangs in
            the parent, so None, the default, steps in the parent only when
            there is no timeout.
          seeds: Optional sequence of one seed (or None) per environment, used at
            that environment's first reset, so runs are reproducible.
          auto_reset: Reset finished environments right after the step that ended
            their episode, so `reset` of those environments needs no round trip.
          return_infos: Return the environments' info dicts. Step infos that
            share one schema of scalars, as those of the MuJoCo tasks do, come
            through shared memory (see `info_columns`), others pickled. With
            False, `step` and `reset` return empty dicts and infos never leave
            the workers, which still saves building them in the parent.
            `InGraphBatchEnv` ignores infos.
          start_method: Multiprocessing start method; 'forkserver' or 'spawn' are
            safe in a process that has imported TensorFlow. With 'fork', workers
            inherit each other's pipes and may outlive a killed parent.
          timeout: Seconds to wait for the workers' answer to a step, reset or
            other command before stopping them; None waits for ever. Building the
            environments may take `contract.STARTUP_TIMEOUT`.
          spin_seconds: Seconds a worker keeps polling for the next command after
            replying, instead of sleeping, when the previous command came within
            that time (after a command that ran longer, as long as it ran, up to
            4 times this); this saves the wake-up of a sleeping worker when the
            parent steps again at once (as a benchmark does), and costs no CPU
            when it steps rarely (as a training loop does, which computes for a
            millisecond between steps). The parent polls `spin_seconds` for the
            replies while fewer are missing than there are cores, and otherwise
            sleeps until the last reply. A process whose polling lost
            its core to another program sleeps at once for a while (see
            `waiting.SpinBudget`). 0 makes workers and parent always sleep.

        Raises:
          ValueError: If there are no constructors, a bad number of workers or
            seeds, or the environments' spaces differ.
          TypeError: If a constructor is not callable or cannot be pickled, or a
            space cannot be batched.
          WorkerError: If a constructor raised inside a worker.
        """
        super().__init__()
        constructors = contract.check_constructors(constructors, 'ParallelBatchEnv')
        seeds = [None] * len(constructors) if seeds is None else contract.as_seeds(seeds)
        if len(seeds) != len(constructors):
            raise ValueError(
                f'Got {len(seeds)} seeds for {len(constructors)} environments; pass one '
                f'seed (or None) per environment.')
        if step_in_parent is None:
            step_in_parent = timeout is None
        if num_workers is None:
            num_workers = max(1, (os.cpu_count() or 1) - (1 if step_in_parent else 0))
        if num_workers < 1:
            raise ValueError(f'num_workers must be at least 1, got {num_workers}.')
        if not spin_seconds >= 0:
            raise ValueError(f'spin_seconds must be at least 0, got {spin_seconds}.')
        self._resources = _Resources()
        self._finalizer = weakref.finalize(self, self._resources.release)
        self._timeout = timeout
        self._auto_reset = auto_reset
        self._slice_options = dict(auto_reset=auto_reset, return_infos=return_infos)
        self._spin = waiting.SpinBudget(spin_seconds)
        self._cores = os.cpu_count() or 1
        try:
            self._start(constructors, seeds, num_workers, step_in_parent, start_method)
        except BaseException:
            self.close()
            raise

    def __getitem__(self, index):
        """A read-only view of one environment's attributes, fetched from its process."""
        return _EnvView(self, self._check_indices([index])[0])

    @property
    def num_workers(self):
        """Number of worker processes."""
        return len(self._resources.workers)

    @property
    def worker_pids(self):
        """Process ids of the workers, in the order of the environments they step."""
        return [worker.process.pid for worker in self._resources.workers]

    @property
    def num_parent_envs(self):
        """Number of environments the parent process steps itself."""
        local = self._resources.local
        return len(local.envs) if local else 0

    def _step(self, actions, indices):
        local = self._resources.local
        if indices is None:
            rows = slice(None)
            for target, leaf in zip(self._actions, self._action_layout.flatten(actions)):
                target[...] = leaf
            # Until this step succeeds, no environment has a first observation waiting.
            self._has_first_observ[:] = False
            self._first_infos = {}
            messages, run_local = self._step_messages, local.step if local else None
        else:
            rows = np.asarray(indices, dtype=np.intp)
            for target, leaf in zip(self._actions, self._action_layout.flatten(actions)):
                target[rows] = leaf
            self._has_first_observ[rows] = False
            if self._first_infos:
                for index in indices:
                    self._first_infos.pop(index, None)
            self._stepping[:] = False
            self._stepping[rows] = True
            # Only the processes that host an environment to step take part.
            local_indices, worker_indices = self._by_host(indices)
            messages = [(worker, _STEP_SOME, None) for worker, _ in worker_indices]
            run_local = functools.partial(local.step, some=True) if local_indices else None
        infos = self._exchange_steps(messages, run_local)
        # A slice gives views into shared memory, which are copied; indices give copies.
        take = (lambda array: array.copy()) if indices is None else (
            lambda array: array.take(rows, axis=0))
        observ = self._observ_layout.unflatten([take(leaf) for leaf in self._observ])
        terminated, truncated = take(self._terminated), take(self._truncated)
        if self._auto_reset:
            self._has_first_observ[rows] = terminated | truncated
        return (
            observ, take(self._reward), terminated, truncated,
            _ordered_infos(infos, range(self._size) if indices is None else indices))

    def _step_or_reset(self, actions, reset_mask):
        """Step the environments not in the mask; those in it were reset ahead.

        One exchange with the workers, as a step of some environments, when every
        environment to reset was reset after its last step.
        """
        if not (self._auto_reset and self._has_first_observ[reset_mask].all()):
            return super()._step_or_reset(actions, reset_mask)
        reset = np.flatnonzero(reset_mask)
        stepping = ~reset_mask
        for target, leaf in zip(self._actions, self._action_layout.flatten(actions)):
            target[...] = leaf
        self._stepping[:] = stepping
        reset_infos = {
            index: self._first_infos[index] for index in reset.tolist()
            if index in self._first_infos}
        self._first_infos = {}
        self._has_first_observ[:] = False
        local = self._resources.local
        messages = [
            (worker, _STEP_SOME, None) for worker in self._resources.workers
            if stepping[worker.start:worker.stop].any()]
        run_local = (
            functools.partial(local.step, some=True)
            if local and stepping[local.start:local.stop].any() else None)
        infos = self._exchange_steps(messages, run_local)
        infos.update(reset_infos)
        observ = []
        for leaf, first_leaf in zip(self._observ, self._first_observ):
            leaf = leaf.copy()
            leaf[reset] = first_leaf[reset]
            observ.append(leaf)
        reward = self._reward.copy()
        reward[reset] = 0.0
        terminated, truncated = self._terminated & stepping, self._truncated & stepping
        self._has_first_observ[:] = terminated | truncated
        return (
            self._observ_layout.unflatten(observ), reward, terminated, truncated,
            _ordered_infos(infos, range(self._size)))

    def _exchange_steps(self, messages, run_local):
        """Exchange step commands and keep the infos of automatic resets.

        The first step that returns infos decides whether the workers write
        infos to shared columns from then on (see `info_columns`).

        Returns:
          Dict from batch index to the non-empty info of its step.
        """
        results = self._exchange(messages, run_local, 'calling step()')
        infos = {}
        if run_local is not None:
            self._keep_step_infos(infos, results.pop(0))
        column_rows = []
        for (worker, command, _), reply in zip(messages, results):
            if reply is _INFOS_IN_COLUMNS:
                column_rows += self._stepped_rows(worker, command)
            else:
                self._keep_step_infos(infos, reply)
        if column_rows:
            infos.update(zip(column_rows, self._info_columns.read(_as_slice(column_rows))))
        if infos and not self._info_schema_checked:
            self._info_schema_checked = True
            schema = info_columns.schema_of(infos.values())
            if schema:
                self._attach_info_columns(schema)
        return infos

    def _keep_step_infos(self, infos, reply):
        """Add the step infos of a pickled reply to `infos`; keep its reset infos."""
        if reply is not None:
            step_infos, first_infos = reply
            infos.update(step_infos)
            self._first_infos.update(first_infos)

    def _stepped_rows(self, worker, command):
        """The batch indices of the environments a worker stepped, in order."""
        if command == _STEP:
            return range(worker.start, worker.stop)
        return (np.flatnonzero(self._stepping[worker.start:worker.stop]) + worker.start).tolist()

    def _attach_info_columns(self, schema):
        """Create info columns for `schema` and have every worker write its infos to them."""
        columns = self._resources.info_columns = info_columns.InfoColumns(schema, self._size)
        self._exchange(
            [(worker, _ATTACH_INFOS, (schema, self._size, columns.name))
             for worker in self._resources.workers], None, 'attaching shared memory for infos')
        self._info_columns = columns

    def _reset(self, indices, seeds, options):
        """Reset environments; those reset after their last step need no round trip.

        Environments whose episode ended in the last step were already reset by
        their process; their first observation is returned without a round trip
        unless seeds or options ask for a new reset.
        """
        rows = np.asarray(indices, dtype=np.intp)
        if all(seed is None for seed in seeds) and options is None:
            requests = [
                (index, None) for index, waiting_observ in zip(
                    indices, self._has_first_observ.take(rows).tolist()) if not waiting_observ]
        else:
            requests = list(zip(indices, seeds))
        stashed_infos = {index: self._first_infos.pop(index, {}) for index in indices}
        local_requests, worker_requests = self._by_host(requests, lambda request: request[0])
        messages = [
            (worker, _RESET, (some, options)) for worker, some in worker_requests]
        run_local = (
            functools.partial(self._resources.local.reset, local_requests, options)
            if local_requests else None)
        fresh_infos = {}
        for reply in self._exchange(messages, run_local, 'calling reset()'):
            fresh_infos.update(reply)
        self._has_first_observ[rows] = False
        observ = self._observ_layout.unflatten(
            [leaf.take(rows, axis=0) for leaf in self._first_observ])
        requested = {index for index, _ in requests}
        return observ, tuple(
            fresh_infos.get(index, {}) if index in requested else stashed_infos[index]
            for index in indices)

    def _apply(self, function, args, indices):
        local_indices, worker_indices = self._by_host(indices)
        messages = [(worker, _APPLY, (function, args, some)) for worker, some in worker_indices]
        run_local = (
            functools.partial(self._resources.local.apply, function, args, local_indices)
            if local_indices else None)
        replies = self._exchange(messages, run_local, f'running {function.__name__}()')
        shares = ([local_indices] if run_local else []) + [some for _, some in worker_indices]
        results = {}
        for share, reply in zip(shares, replies):
            results.update(zip(share, reply))
        return [results[index] for index in indices]

    def _by_host(self, items, index_of=lambda item: item):
        """Split items by the process that hosts their environment.

        Args:
          items: List of environment indices, or of items holding one.
          index_of: Function of an item returning its environment's index.

        Returns:
          The list of the items of the parent's share, and a list of (worker,
          list of its items) for the workers that have any.
        """
        by_host = {}
        for item in items:
            by_host.setdefault(self._host_of[index_of(item)], []).append(item)
        return by_host.pop(self._resources.local, []), [
            (worker, by_host[worker]) for worker in self._resources.workers if worker in by_host]

    def _close(self, timeout):
        """End the workers, close the environments and free the shared memory."""
        self._first_observ = self._observ = self._actions = None
        self._reward = self._terminated = self._truncated = self._busy = None
        self._stepping = None
        self._resources.close_timeout = timeout
        self._finalizer()

    def _start(self, constructors, seeds, num_workers, step_in_parent, start_method):
        """Start the workers, build the parent's share and the shared memory."""
        size = len(constructors)
        self._busy = None
        self._info_columns = None
        self._info_schema_checked = False
        self._first_infos = {}
        self._has_first_observ = np.zeros(size, bool)
        parent_count = size // (num_workers + 1) if step_in_parent else 0
        bounds = _split(parent_count, size, min(num_workers, size - parent_count))
        context = multiprocessing.get_context(start_method)
        # The first replies are the workers' descriptions of their environments,
        # which each sends unasked once it has built them.
        self._countdown = self._resources.countdown = _Countdown(context, len(bounds))
        self._commands = self._resources.commands = _Commands(context, len(bounds))
        for index, (start, stop) in enumerate(bounds):
            try:
                pickled_constructors = cloudpickle.dumps(constructors[start:stop])
            except Exception as error:
                raise TypeError(
                    f'Cannot send the constructors of environments {start} to {stop - 1} to a '
                    f'worker process, cloudpickle failed: {error}') from error
            self._resources.workers.append(_Worker(
                context, index, pickled_constructors, start, seeds[start:stop],
                self._slice_options, self._spin.seconds, self._countdown, self._commands))
        self._countdown.started()
        self._step_messages = [(worker, _STEP, None) for worker in self._resources.workers]
        self._worker_of_sentinel = {
            worker.sentinel: worker for worker in self._resources.workers}
        waiting.watch_signals()
        self._waiter = waiting.Waiter([self._countdown.fd, *self._worker_of_sentinel])
        if parent_count:
            self._resources.local = _EnvSlice(
                [constructor() for constructor in constructors[:parent_count]], 0,
                seeds[:parent_count], **self._slice_options)
        # The process hosting each environment: a worker, or the parent's slice.
        self._host_of = [
            host for host in [self._resources.local] + self._resources.workers if host
            for _ in range(host.start, host.stop)]
        startup = [(worker, None, None) for worker in self._resources.workers]
        local_describe = self._resources.local.describe if parent_count else None
        descriptions = [
            description for reply in self._exchange(
                startup, local_describe, 'building the environments',
                contract.startup_timeout(self._timeout))
            for description in reply]
        self._set_spaces([(observ, action) for observ, action, _ in descriptions])
        self._names = [name for _, _, name in descriptions]
        shared = shared_arrays.SharedArrays(_shared_layout(
            size, self._observ_layout, self._action_layout))
        self._resources.shared = shared
        self._exchange(
            [(worker, _ATTACH, (shared.name, shared.layout))
             for worker in self._resources.workers], None, 'attaching shared memory')
        if self._resources.local:
            self._resources.local.bind(shared)
        self._actions = _leaf_arrays(shared, 'action')
        self._observ = _leaf_arrays(shared, 'observ')
        self._first_observ = _leaf_arrays(shared, 'first_observ')
        self._reward = shared['reward']
        self._terminated, self._truncated = shared['terminated'], shared['truncated']
        self._busy, self._stepping = shared['busy'], shared['stepping']

    def _exchange(self, messages, run_local, description, timeout=None):
        """Send commands to workers, run the parent's share meanwhile, gather replies.

        Args:
          messages: List of (worker, command, payload); a command of None sends
            nothing and only waits for the worker's reply.
          run_local: Zero-argument callable for the parent's share, or None.
          description: What the command does, for error messages.
          timeout: Seconds to wait for the replies; the batch's timeout if None.

        Returns:
          List of the local result (if any) followed by the workers' replies in
          worker order.
        """
        if not messages and run_local is None:
            return []
        timeout = self._timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        commands = [message for message in messages if message[1] is not None]
        try:
            if commands:
                self._countdown.expect([worker.index for worker, _, _ in messages])
                self._commands.send(commands)
            if run_local is None:
                self._spin.give_way()
            workers = [worker for worker, _, _ in messages]
            local_result, local_error = None, None
            if run_local is not None:
                try:
                    local_result = run_local()
                except Exception as error:  # Raised once the workers have replied.
                    local_error = error
            replies, worker_errors = self._receive(workers, deadline, description, timeout)
        except BaseException as error:
            # A worker died or timed out, or the wait was interrupted: replies may
            # be in flight, so the protocol cannot continue. Only after a death
            # are the other workers healthy enough to close their environments.
            died = isinstance(error, errors.WorkerDiedError) and not isinstance(
                error, errors.WorkerTimeoutError)
            self._shut_down(contract.CLOSE_TIMEOUT if died else 0)
            raise
        if local_error is not None or worker_errors:
            # The environment that raised is still marked busy; a later
            # timeout must not name it.
            if self._busy is not None:
                self._busy[:] = False
            raise local_error if local_error is not None else worker_errors[0]
        results = [local_result] if run_local is not None else []
        return results + [replies[worker] for worker in workers]

    def _receive(self, workers, deadline, description, timeout):
        """Wait for one reply from each worker, watching for workers that die.

        Waits only if some reply is still missing, until the last of the
        workers has replied (see `_Countdown`), then reads the replies that
        carry a payload from the workers' pipes.

        Args:
          workers: The workers to wait for; the countdown expects their replies.
          deadline: `time.monotonic()` time to give up at, or None.
          description: What the workers were asked to do, for error messages.
          timeout: Seconds waited in all, for the message of a timeout.

        Raises:
          WorkerDiedError: If a worker died.
          WorkerTimeoutError: If a worker did not reply before the deadline.
          WaitInterrupted: If Ctrl-C or SIGTERM arrived.

        Returns:
          Dict from worker to its reply payload (None for an empty reply,
          `_INFOS_IN_COLUMNS` for a step whose infos are in the columns), and a
          list of `WorkerError`s.
        """
        if not workers:
            return {}, []
        countdown = self._countdown
        if countdown.remaining():
            if countdown.start_waiting():
                # Polling takes no core from the workers only while some core has none.
                spin = self._spin if countdown.remaining() < self._cores else None
                while True:
                    ready = self._waiter.wait(
                        deadline, f'environment workers {description}', spin)
                    if countdown.fd in ready:
                        break
                    if not ready:
                        raise self._timeout_error(
                            [worker for worker in workers if not countdown.replied(worker.index)],
                            description, timeout)
                    raise self._worker_of_sentinel[ready[0]].died_error()
                countdown.clear()
            countdown.stop_waiting()
        else:
            countdown.synchronize()
        replies, worker_errors = {}, []
        for worker in workers:
            state = countdown.state(worker.index)
            if state != _PIPED:
                replies[worker] = _INFOS_IN_COLUMNS if state == _COLUMNS else None
                continue
            try:
                replies[worker] = worker.receive()
            except errors.WorkerError as error:
                worker_errors.append(error)
        return replies, worker_errors

    def _timeout_error(self, workers, description, timeout):
        """The error for workers that did not answer in time, naming what they ran."""
        hung = [] if self._busy is None else [
            self._names[index] for index in np.flatnonzero(self._busy)
            if any(worker.start <= index < worker.stop for worker in workers)]
        running = f' in {", ".join(hung)}' if hung else ''
        return errors.WorkerTimeoutError(
            f'Timed out after {timeout} s: the '
            f'{"; the ".join(worker.description for worker in workers)} did not finish '
            f'{description}{running}. The workers were stopped and the ParallelBatchEnv '
            f'closed. If the environment is only slow, raise the timeout.')


class _EnvView:
    """Attribute access to one environment of a `ParallelBatchEnv`, wherever it runs."""

    def __init__(self, batch, index):
        self._batch = batch
        self._index = index

    def __getattr__(self, name):
        """The environment's attribute; methods are reached through `call` instead."""
        if name.startswith('__'):
            raise AttributeError(name)
        try:
            return self._batch.apply(access.get_attribute, name, indices=[self._index])[0]
        except errors.WorkerError as error:
            if error.exception_type == 'AttributeError':
                raise AttributeError(str(error)) from error
            raise


class _Resources:
    """Everything a `ParallelBatchEnv` must release; kept apart so a finalizer can."""

    def __init__(self):
        self.workers = []
        self.local = None
        self.shared = None
        self.info_columns = None
        self.countdown = None
        self.commands = None
        # Seconds the workers get to exit before they are stopped.
        self.close_timeout = contract.CLOSE_TIMEOUT

    def release(self):
        """Stop the workers, close the parent's environments, unlink shared memory."""
        try:
            if self.workers:
                self.commands.close_workers(self.workers)
            deadline = time.monotonic() + self.close_timeout
            for worker in self.workers:
                worker.join_or_kill(max(0.0, deadline - time.monotonic()))
            if self.local is not None:
                self.local.close()
        finally:
            if self.countdown is not None:
                self.countdown.close()
            if self.commands is not None:
                self.commands.close()
            if self.shared is not None:
                self.shared.close()
            if self.info_columns is not None:
                self.info_columns.close()


class _EnvSlice:
    """Consecutive environments of the batch, stepped one after another in one process.

    Used inside the workers and for the parent's own share, so both follow the
    same rules for results, automatic resets and seeds. Reads actions from and
    writes results to its rows of the shared arrays.
    """

    def __init__(self, envs, start, seeds, auto_reset, return_infos):
        self.envs = envs
        self.start = start
        self.stop = start + len(envs)
        self._pending_seeds = list(seeds)
        self._auto_reset = auto_reset
        self._return_infos = return_infos
        self._info_columns = None

    def describe(self):
        """List of (observation space, action space, name) of the environments."""
        return [
            (env.observation_space, env.action_space,
             f'environment {self.start + offset} ({errors.env_name(env)})')
            for offset, env in enumerate(self.envs)]

    def bind(self, shared):
        """Use this slice's rows of the `SharedArrays` for actions and results."""
        self._observ_layout = batching.BatchLayout(self.envs[0].observation_space, 'observation')
        self._action_layout = batching.BatchLayout(self.envs[0].action_space, 'action')
        rows = slice(self.start, self.stop)
        self._actions = [leaf[rows] for leaf in _leaf_arrays(shared, 'action')]
        self._observ = [leaf[rows] for leaf in _leaf_arrays(shared, 'observ')]
        self._first_observ = [leaf[rows] for leaf in _leaf_arrays(shared, 'first_observ')]
        self._reward = shared['reward'][rows]
        self._busy = shared['busy'][rows]
        self._stepping = shared['stepping'][rows]
        self._terminated = shared['terminated'][rows]
        self._truncated = shared['truncated'][rows]

    def bind_info_columns(self, columns):
        """Write step infos that fit the schema of the `InfoColumns` to them from now on."""
        self._info_columns = columns

    def step(self, some=False):
        """Step environments with their actions from shared memory.

        Args:
          some: Step only the environments marked in the shared `stepping`
            array, in the order of their indices; all if False.

        Returns:
          None if no environment returned an info; `_INFOS_IN_COLUMNS` if every
          stepped environment returned an info that fitted the info columns,
          where it was written, and none was reset; else a pair of dicts from
          batch index to the step info and to the info of an automatic reset.
        """
        offsets = np.flatnonzero(self._stepping).tolist() if some else range(len(self.envs))
        infos, first_infos = {}, {}
        # Copy the actions so environments that keep them are not affected when
        # the next batch of actions is written.
        actions = self._action_layout.rows(
            self._action_layout.unflatten([leaf.copy() for leaf in self._actions]))
        busy, envs = self._busy, self.envs
        # Results are gathered in lists and written to shared memory at once,
        # which costs less than a write per environment and result.
        observs, rewards, terminals, truncations = [], [], [], []
        for offset in offsets:
            # Marks the environment the parent names if this step times out.
            busy[offset] = True
            observ, reward, is_terminal, is_truncated, info = envs[offset].step(actions[offset])
            busy[offset] = False
            observs.append(observ)
            rewards.append(reward)
            terminals.append(is_terminal)
            truncations.append(is_truncated)
            if info and self._return_infos:
                infos[self.start + offset] = info
            if self._auto_reset and (is_terminal or is_truncated):
                self._reset_one(offset, None, None, first_infos)
        if observs:
            rows = offsets if some else slice(None)
            for leaf, values in zip(self._observ, self._observ_layout.flatten_rows(observs)):
                leaf[rows] = values
            self._reward[rows] = rewards
            self._terminated[rows] = terminals
            self._truncated[rows] = truncations
        if not (infos or first_infos):
            return None
        columns = self._info_columns
        if columns is not None and not first_infos and len(infos) == len(offsets):
            batch_rows = list(infos) if some else slice(self.start, self.stop)
            if columns.write(batch_rows, infos.values()):
                return _INFOS_IN_COLUMNS
        return infos, first_infos

    def reset(self, requests, options):
        """Reset environments, writing their first observations to shared memory.

        Args:
          requests: List of (batch index, seed or None) of environments in this slice.
          options: Reset options dict or None.

        Returns:
          Dict from batch index to non-empty reset info.
        """
        first_infos = {}
        for index, seed in requests:
            self._reset_one(index - self.start, seed, options, first_infos)
        return first_infos

    def apply(self, function, args, indices):
        """List of `function(env, *args)` for the environments at batch `indices`."""
        return [function(self.envs[index - self.start], *args) for index in indices]

    def close(self):
        """Close the environments and let go of the shared arrays."""
        self._actions = self._observ = self._first_observ = None
        self._reward = self._terminated = self._truncated = self._busy = None
        self._stepping = None
        if self._info_columns is not None:
            self._info_columns.close()
        for env in self.envs:
            env.close()

    def _reset_one(self, offset, seed, options, first_infos):
        # The seed given at construction applies to an environment's first reset.
        if seed is None:
            seed = self._pending_seeds[offset]
        self._pending_seeds[offset] = None
        self._busy[offset] = True
        observ, info = self.envs[offset].reset(seed=seed, options=options)
        self._busy[offset] = False
        self._write(self._first_observ, offset, observ)
        if info and self._return_infos:
            first_infos[self.start + offset] = info

    def _write(self, leaves, offset, observ):
        """Write an observation into row `offset` of the shared observation leaves."""
        for leaf, value in zip(leaves, self._observ_layout.flatten(observ)):
            leaf[offset] = value


class _Countdown:
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
        self._shared = context.Array('q', [workers, 0] + [_PENDING] * workers, lock=False)
        self._lock = context.Lock()
        self._reader, self._writer = context.Pipe(duplex=False)
        self.fd = self._reader.fileno()

    def worker_end(self, index):
        """What worker `index` needs to count its replies: a `_CountdownEnd`."""
        return _CountdownEnd(self._shared, self._lock, self._writer, self._STATES + index)

    def started(self):
        """Drop the parent's copy of the workers' end once they all have theirs."""
        self._writer.close()

    def expect(self, indices):
        """Await a reply from each worker in `indices`; call before sending the commands."""
        for index in indices:
            self._shared[self._STATES + index] = _PENDING
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
        _take_once(self._lock, self.LOCK_SECONDS)

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
        return self._shared[self._STATES + index] != _PENDING

    def state(self, index):
        """The state of worker `index`'s reply: `_PENDING`, `_EMPTY`, `_COLUMNS` or `_PIPED`."""
        return self._shared[self._STATES + index]

    def close(self):
        """Close the parent's ends of the pipe; let go of the shared array and its lock.

        The lock is a named semaphore (a file in /dev/shm on Linux), removed
        once no process holds it.
        """
        self._writer.close()
        self._reader.close()
        self._shared = self._lock = None


class _CountdownEnd:
    """A worker's end of the `_Countdown`."""

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
        if data == _DONE:
            self._count_one(_EMPTY)
        elif data == _INFOS_IN_COLUMNS:
            self._count_one(_COLUMNS)
        elif len(data) <= select.PIPE_BUF:
            _write(fd, data)
            self._count_one(_PIPED)
        else:
            self._count_one(_PIPED)
            _write(fd, data)

    def _count_one(self, state):
        """Set this worker's reply state and count the reply; wake a waiting parent if last."""
        shared = self._shared
        with self._lock:
            shared[self._state_index] = state
            shared[_Countdown._REMAINING] -= 1
            wake = shared[_Countdown._REMAINING] == 0 and shared[_Countdown._WAITING]
        if wake:
            os.write(self._writer.fileno(), _DONE)


class _Worker:
    """Parent-side handle of one worker process: its pipes and process."""

    def __init__(
            self, context, index, constructors, start, seeds, slice_options, spin_seconds,
            countdown, commands):
        command_reader, command_writer = context.Pipe(duplex=False)
        result_reader, result_writer = context.Pipe(duplex=False)
        self.index = index
        self.start = start
        self.stop = start + len(seeds)
        self.process = context.Process(
            target=_worker_main,
            args=(
                constructors, start, seeds, slice_options, spin_seconds, command_reader,
                result_writer, countdown.worker_end(index), commands.worker_end(index)),
            name=f'ParallelBatchEnv-worker-{index}', daemon=True)
        self.process.start()
        # Without the parent's copies of the worker's ends, a dead worker shows up
        # as end-of-file on the result pipe and a dead parent as end-of-file on the
        # command pipe.
        command_reader.close()
        result_writer.close()
        self._command = command_writer
        self._result = result_reader
        self.result_fd = result_reader.fileno()
        self.sentinel = self.process.sentinel
        self.description = (
            f'environment worker {index} (pid {self.process.pid}, environments '
            f'{self.start} to {self.stop - 1})')

    def send(self, command, payload=None):
        """Write a posted command (see `_Commands`) to the pipe; raises if the worker is gone."""
        try:
            _write(self._command.fileno(), _encode(command, payload, cloudpickle.dumps))
        except (BrokenPipeError, ConnectionResetError):
            raise self.died_error() from None

    def receive(self):
        """Read one reply; raises `WorkerError` for an exception in the worker."""
        try:
            kind, payload = _read(self.result_fd)
        except EOFError:
            raise self.died_error() from None
        if kind == _FAILURE:
            raise errors.WorkerError.from_failure(payload, f'raised in {self.description}')
        return payload

    def died_error(self):
        """The error to raise when the worker ended unexpectedly."""
        return errors.WorkerDiedError(
            f'The {self.description} {errors.describe_exit(self.process)}; the '
            f'ParallelBatchEnv is closed. Check memory use and the environment for crashes.')

    def request_close(self):
        """Ask a sleeping worker to exit; see `_Commands.close_workers`."""
        try:
            os.write(self._command.fileno(), _CLOSE)
        except OSError:
            pass

    def join_or_kill(self, timeout):
        """Wait for the worker to exit, killing it after `timeout` seconds."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.terminate()
            self.process.join(1.0)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        self._command.close()
        self._result.close()
        self.process.close()


def _worker_main(
        constructors, start, seeds, slice_options, spin_seconds, command_reader, result_writer,
        countdown, commands):
    """Body of a worker process: build the environments, then serve commands."""
    # Ctrl-C reaches the whole process group; the parent decides when to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    command_fd, result_fd = command_reader.fileno(), result_writer.fileno()
    env_slice, shared = None, None
    try:
        env_slice = _EnvSlice(
            [constructor() for constructor in pickle.loads(constructors)], start, seeds,
            **slice_options)
        reply = _encode(_RESULT, env_slice.describe())
    except Exception as error:
        reply = _encode(_FAILURE, errors.describe_exception(error))
    countdown.reply(result_fd, reply)
    command_wait = _CommandWait(command_fd, spin_seconds, commands)
    try:
        while True:
            command, payload = command_wait.next()
            if command == _CLOSE:
                break
            command_wait.started()
            try:
                if command == _STEP:
                    reply = env_slice.step()
                elif command == _STEP_SOME:
                    reply = env_slice.step(some=True)
                elif command == _RESET:
                    reply = env_slice.reset(*payload)
                elif command == _APPLY:
                    reply = env_slice.apply(*payload)
                elif command == _ATTACH:
                    shared = shared_arrays.SharedArrays(payload[1], name=payload[0])
                    env_slice.bind(shared)
                    reply = None
                elif command == _ATTACH_INFOS:
                    env_slice.bind_info_columns(info_columns.InfoColumns(*payload))
                    reply = None
                else:
                    raise ValueError(f'Unknown command {command!r}.')
                if reply is None:
                    reply = _DONE
                elif reply is not _INFOS_IN_COLUMNS:
                    reply = _encode(_RESULT, reply)
            except Exception as error:
                reply = _encode(_FAILURE, errors.describe_exception(error))
            # Before the reply: the parent it wakes may take this core at once.
            command_wait.finished()
            countdown.reply(result_fd, reply)
    finally:
        if env_slice is not None:
            env_slice.close()
        if shared is not None:
            shared.close()


class _Commands:
    """The command each worker is to run next, posted in shared memory.

    For each worker the shared array holds the sequence number of its latest
    command, that command's kind, and whether the worker sleeps. Posting a
    command writes its kind and increments the sequence number, which a
    polling worker watches: a step seen there costs neither process a system
    call. A command with a payload is also written to the worker's pipe, after
    it is posted. A worker that stops polling says so under the lock, and sleeps
    on its pipe; the parent posts under the same lock, so it either sees that
    the worker sleeps, and writes `_WAKE` to its pipe, or the worker sees the
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
        """What worker `index` needs to see its commands: a `_CommandsEnd`."""
        return _CommandsEnd(self._shared, self._lock, self.ENTRIES * index)

    def send(self, messages):
        """Post commands; write those with a payload to the pipe, and wake sleeping workers.

        Args:
          messages: List of (worker, command, payload), where a worker has an
            `index` and a `send(command, payload=None)` that writes to its pipe.
        """
        asleep = self._post([(worker.index, command) for worker, command, _ in messages])
        for worker, command, payload in messages:
            if command in _KINDS_WITH_PAYLOAD:
                worker.send(command, payload)
            elif worker.index in asleep:
                worker.send(_WAKE)

    def close_workers(self, workers):
        """Post `_CLOSE` to every worker, waking those that sleep.

        A polling worker sees it at once, not only when its polling ends.
        Workers that are gone are passed over.

        Args:
          workers: The `_Worker`s.
        """
        asleep = self._post([(worker.index, _CLOSE) for worker in workers])
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


class _CommandsEnd:
    """A worker's end of `_Commands`."""

    def __init__(self, shared, lock, entry):
        self._shared = shared
        self._lock = lock
        self._sequence = entry + _Commands.SEQUENCE
        self._kind = entry + _Commands.KIND
        self._sleeping = entry + _Commands.SLEEPING
        self._last = 0  # Sequence number of the last command taken.

    def posted(self):
        """Whether a command was posted that has not been taken."""
        return self._shared[self._sequence] != self._last

    def take(self):
        """The kind of the command posted last; call once `posted()`.

        Taking the lock once makes the parent's writes before it posted, such
        as the actions, visible to this process on any processor.
        """
        _take_once(self._lock, _Commands.LOCK_SECONDS)
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
        while not self._lock.acquire(timeout=_Commands.LOCK_SECONDS):
            if pipe_readable():
                return True
        try:
            if self.posted():
                return False
            self._shared[self._sleeping] = 1
            return True
        finally:
            self._lock.release()


class _CommandWait:
    """A worker's wait for its next command: briefly polling if commands come fast.

    Polls the shared `_Commands` before sleeping on the command pipe (see
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
            and `_CLOSE` come through it, and its end means the parent is gone.
          spin_seconds: Bounds the polling (see above).
          commands: The worker's `_CommandsEnd`.
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
          `_CLOSE` if the parent asked the worker to exit or is gone.
        """
        self._wait_started = time.perf_counter()
        seconds = self._polling_seconds
        commands = self._commands
        woken = False  # Whether the parent saw this worker sleep, and wrote `_WAKE`.
        if not (self._last_wait < seconds and self._spin.spin(commands.posted, seconds=seconds)):
            while not commands.posted():
                if not commands.start_sleeping(self._pipe_readable):
                    break
                woken = True
                self._poller.poll()
                # Nothing posted: the pipe ended, or holds a `_WAKE` that an
                # earlier command posted without the lock did not need.
                if not commands.posted() and self._read_kind() != _WAKE:
                    return _CLOSE, None
        kind = commands.take()
        if kind in _KINDS_WITH_PAYLOAD:
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
        """Read a command from the pipe, past any `_WAKE`; `_CLOSE` at the pipe's end."""
        kind = self._read_kind()
        while kind == _WAKE:
            kind = self._read_kind()
        try:
            return _read(self._fd, kind) if kind else (_CLOSE, None)
        except EOFError:
            return _CLOSE, None

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


def _take_once(lock, seconds):
    """Take a lock and release it at once: another process's writes before it are then seen here.

    The lock is tried without sleeping, which would cost a wake-up when it is
    held for the moment it takes another process to count or post; one that
    died holding it is given up on after `seconds`.
    """
    locked = lock.acquire(False)
    deadline = None if locked else time.monotonic() + seconds
    while not locked and time.monotonic() < deadline:
        os.sched_yield()
        locked = lock.acquire(False)
    if locked:
        lock.release()


def _ordered_infos(infos, indices):
    """Tuple of the info in `infos` of each index in `indices`; an empty dict where none."""
    if not infos:
        return tuple([{} for _ in indices])
    return tuple([infos.get(index, {}) for index in indices])


def _as_slice(rows):
    """The ascending, distinct batch indices `rows` as a slice if they are consecutive.

    Rows read through a slice are views, which cost less than a copy of each column.
    """
    if rows[-1] - rows[0] + 1 == len(rows):
        return slice(rows[0], rows[-1] + 1)
    return rows


def _reduce_as(scalar_type, python_type):
    """A pickle reducer that sends a NumPy scalar as a Python number and its type."""
    # A closure: a `functools.partial` with keywords costs twice as much per call.
    def reduce(value):
        return scalar_type, (python_type(value),)
    return reduce


class _ReplyPickler(pickle.Pickler):
    """Pickles NumPy scalars as Python numbers plus their type, about twice as fast.

    Environments such as the MuJoCo tasks return infos of NumPy scalars at every
    step; NumPy's own pickling of a scalar (dtype plus raw bytes) dominates the
    cost of sending them. The conversion is exact for these types.
    """

    dispatch_table = copyreg.dispatch_table.copy()
    for _type, _python_type in info_columns.NUMPY_SCALARS.items():
        dispatch_table[_type] = _reduce_as(_type, _python_type)
    del _type, _python_type


def _dumps_reply(payload, protocol):
    buffer = io.BytesIO()
    _ReplyPickler(buffer, protocol).dump(payload)
    return buffer.getvalue()


def _encode(kind, payload, dumps=_dumps_reply):
    """Bytes of one message: the kind byte, then the payload's length and pickle."""
    if kind not in _KINDS_WITH_PAYLOAD:
        return kind
    body = dumps(payload, pickle.HIGHEST_PROTOCOL)
    return kind + _LENGTH.pack(len(body)) + body


def _write(fd, data):
    """Write all bytes of `data` to a file descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read(fd, kind=None):
    """Read one message; raises EOFError if the other end is closed.

    Args:
      fd: The file descriptor to read from.
      kind: The message's kind byte, if the caller has read it already.

    Returns:
      Pair of the kind byte and the unpickled payload (None if it has none).
    """
    data = b''
    if kind is None:
        data = os.read(fd, _READ_SIZE)
        if not data:
            raise EOFError
        kind, data = data[:1], data[1:]
    if kind not in _KINDS_WITH_PAYLOAD:
        return kind, None
    buffer = bytearray(data)
    while len(buffer) < _LENGTH.size:
        buffer += _read_more(fd, _READ_SIZE)
    end = _LENGTH.size + _LENGTH.unpack_from(buffer)[0]
    while len(buffer) < end:
        buffer += _read_more(fd, max(_READ_SIZE, end - len(buffer)))
    return kind, pickle.loads(memoryview(buffer)[_LENGTH.size:end])


def _read_more(fd, size):
    data = os.read(fd, size)
    if not data:
        raise EOFError
    return data


def _split(start, stop, parts):
    """Split the range [start, stop) into `parts` consecutive (start, stop) pairs."""
    size, remainder = divmod(stop - start, parts) if parts else (0, 0)
    bounds = []
    for part in range(parts):
        end = start + size + (1 if part < remainder else 0)
        bounds.append((start, end))
        start = end
    return bounds


def _shared_layout(size, observ_layout, action_layout):
    """Layout of the `SharedArrays` of a batch: one array per leaf of each space."""
    layout = {}
    for name, batch_layout in (
            ('action', action_layout), ('observ', observ_layout),
            ('first_observ', observ_layout)):
        for index, space in enumerate(batch_layout.leaves):
            layout[f'{name}.{index}'] = ((size,) + space.shape, space.dtype)
    layout['reward'] = ((size,), np.float64)
    layout['terminated'] = ((size,), bool)
    layout['truncated'] = ((size,), bool)
    # Which environments a worker is stepping or resetting, to name them on a timeout.
    layout['busy'] = ((size,), bool)
    # Which environments a step of some environments steps.
    layout['stepping'] = ((size,), bool)
    return layout


def _leaf_arrays(shared, name):
    """The shared arrays of the leaves of `name`, in the order of the space's leaves."""
    leaves = []
    while f'{name}.{len(leaves)}' in shared.layout:
        leaves.append(shared[f'{name}.{len(leaves)}'])
    return leaves
