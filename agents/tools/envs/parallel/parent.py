"""`ParallelBatchEnv`, the parent of the `parallel` backend: environments spread over workers."""

import functools
import multiprocessing
import os
import time
import weakref

import cloudpickle
import numpy as np

from agents.tools.envs import access
from agents.tools.envs import contract
from agents.tools.envs import errors
from agents.tools.envs import info_columns
from agents.tools.envs import shared_arrays
from agents.tools.envs import waiting
from agents.tools.envs.parallel import commands as commands_lib
from agents.tools.envs.parallel import countdown as countdown_lib
from agents.tools.envs.parallel import env_slice as env_slice_lib
from agents.tools.envs.parallel import protocol
from agents.tools.envs.parallel import worker as worker_lib


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
            timeout=contract.DEFAULT_TIMEOUT, spin_seconds=commands_lib.DEFAULT_SPIN_SECONDS):
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
            messages = [(worker, protocol.STEP_SOME, None) for worker, _ in worker_indices]
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
            (worker, protocol.STEP_SOME, None) for worker in self._resources.workers
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
            if reply is protocol.INFOS_IN_COLUMNS:
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
        if command == protocol.STEP:
            return range(worker.start, worker.stop)
        return (np.flatnonzero(self._stepping[worker.start:worker.stop]) + worker.start).tolist()

    def _attach_info_columns(self, schema):
        """Create info columns for `schema` and have every worker write its infos to them."""
        columns = self._resources.info_columns = info_columns.InfoColumns(schema, self._size)
        self._exchange(
            [(worker, protocol.ATTACH_INFOS, (schema, self._size, columns.name))
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
            (worker, protocol.RESET, (some, options)) for worker, some in worker_requests]
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
        messages = [
            (worker, protocol.APPLY, (function, args, some)) for worker, some in worker_indices]
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
        self._countdown = self._resources.countdown = countdown_lib.Countdown(context, len(bounds))
        self._commands = self._resources.commands = commands_lib.Commands(context, len(bounds))
        for index, (start, stop) in enumerate(bounds):
            try:
                pickled_constructors = cloudpickle.dumps(constructors[start:stop])
            except Exception as error:
                raise TypeError(
                    f'Cannot send the constructors of environments {start} to {stop - 1} to a '
                    f'worker process, cloudpickle failed: {error}') from error
            self._resources.workers.append(worker_lib.Worker(
                context, index, pickled_constructors, start, seeds[start:stop],
                self._slice_options, self._spin.seconds, self._countdown, self._commands))
        self._countdown.started()
        self._step_messages = [(worker, protocol.STEP, None) for worker in self._resources.workers]
        self._worker_of_sentinel = {
            worker.sentinel: worker for worker in self._resources.workers}
        waiting.watch_signals()
        self._waiter = waiting.Waiter([self._countdown.fd, *self._worker_of_sentinel])
        if parent_count:
            self._resources.local = env_slice_lib.EnvSlice(
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
        shared = shared_arrays.SharedArrays(env_slice_lib.shared_layout(
            size, self._observ_layout, self._action_layout))
        self._resources.shared = shared
        self._exchange(
            [(worker, protocol.ATTACH, (shared.name, shared.layout))
             for worker in self._resources.workers], None, 'attaching shared memory')
        if self._resources.local:
            self._resources.local.bind(shared)
        self._actions = env_slice_lib.leaf_arrays(shared, 'action')
        self._observ = env_slice_lib.leaf_arrays(shared, 'observ')
        self._first_observ = env_slice_lib.leaf_arrays(shared, 'first_observ')
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
        workers has replied (see `countdown.Countdown`), then reads the replies that
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
          `protocol.INFOS_IN_COLUMNS` for a step whose infos are in the columns), and a
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
            if state != countdown_lib.PIPED:
                replies[worker] = (
                    protocol.INFOS_IN_COLUMNS if state == countdown_lib.COLUMNS else None)
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


def _split(start, stop, parts):
    """Split the range [start, stop) into `parts` consecutive (start, stop) pairs."""
    size, remainder = divmod(stop - start, parts) if parts else (0, 0)
    bounds = []
    for part in range(parts):
        end = start + size + (1 if part < remainder else 0)
        bounds.append((start, end))
        start = end
    return bounds
