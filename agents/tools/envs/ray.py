"""Environments hosted in Ray actors: `RayEnvironment` and the `ray` backend.

When a batch needs more environments than one machine's cores can step, the
environments can live in Ray actors spread over a cluster. `RayBatchEnv` is
the `ray` backend's batch environment. It is a `BatchEnv` over the handles
that `ray_environments` returns, one `RayEnvironment` per environment; each is
a `remote.RemoteEnvironment` like `process.ExternalProcess` (blocking and
promise-returning `step` and `reset`, forwarded attributes, `call`, `close`):

    batch = RayBatchEnv([make_env] * 16, envs_per_actor=4)
    # or, with the handles at hand:
    batch = BatchEnv(ray_environments([make_env] * 16, envs_per_actor=4), blocking=False)

An actor may host several environments. Their non-blocking requests are
collected until every open environment of the actor has one, and then sent in
a single remote call, so one round trip steps all of them. A promise that is
resolved before its actor's batch is full sends the partial batch.

Ray is an optional dependency: this module imports it only when environments
are created, and says how to install it if it is missing.
"""

import copy
import functools
import logging
import math
import numbers
import threading
import time
import traceback

from agents.tools.envs import batch_env
from agents.tools.envs import contract
from agents.tools.envs import errors
from agents.tools.envs import remote
from agents.tools.envs import waiting

_INSTALL_HINT = "The Ray environment backend needs Ray: pip install -e '.[ray]'"
_PLACEMENT_STRATEGIES = {'spread': 'SPREAD', 'pack': 'PACK'}
# Seconds between checks for Ctrl-C and the timeout while waiting for an actor.
_POLL_SECONDS = 0.1


class RayEnvironmentError(errors.WorkerError):
    """An exception raised by an environment inside a Ray actor.

    The message names the exception type and ends with the traceback in the
    actor. Being a `WorkerError`, it is caught like the errors of
    `ExternalProcess`.
    """

    traceback_heading = 'Remote traceback'


class RayActorDiedError(errors.WorkerDiedError):
    """The Ray actor hosting an environment died (crash, kill, lost node)."""


class RayEnvironment(remote.RemoteEnvironment):
    """One environment hosted in a Ray actor, as seen by `BatchEnv`.

    Created by `ray_environments`. The interface is that of
    `process.ExternalProcess`. Requests of the environments of one actor go
    out together (see the module docstring); promises may be resolved in any
    order. Thread-safe.
    """

    def __init__(self, host, index):
        """Wrap the environment at `index` of the `_ActorHost` `host`."""
        super().__init__()
        self._host = host
        self._index = index

    def close(self, timeout=contract.CLOSE_TIMEOUT):
        """Close the environment; does nothing the second time.

        The actor, and with it the environments it hosts, ends once all of its
        environments are closed.

        Args:
          timeout: Seconds the actor gets to close its environments before it is
            stopped.
        """
        self._host.close(self._index, timeout)

    def _submit(self, request, blocking):
        """Queue a request in the actor's batch and return a promise of its value."""
        if not blocking:
            # The request may wait in the batch while the caller reuses its buffers.
            request = request._replace(
                args=copy.deepcopy(request.args), kwargs=copy.deepcopy(request.kwargs))
        return self._host.submit(self._index, request)


class RayBatchEnv(batch_env.BatchEnv):
    """The `ray` backend: a `BatchEnv` of environments hosted in Ray actors.

    Follows the contract of `contract.BaseBatchEnv`; `batch[i]` is the
    `RayEnvironment` of environment `i`. An actor that dies raises
    `RayActorDiedError`, a `WorkerDiedError`, unless `restart_on_failure`; one
    that does not answer within `timeout` seconds (an option of
    `ray_environments`) raises `WorkerTimeoutError`.
    """

    def __init__(self, constructors, envs_per_actor=None, **options):
        """Start the actors and build the environments in them.

        Args:
          constructors: Zero-argument callables, one per environment, each
            returning a Gymnasium environment.
          envs_per_actor: Environments per actor; None chooses the fewest such
            that the actors fit the cluster's CPUs.
          **options: Further options of `ray_environments`, such as `address`,
            `num_cpus_per_actor`, `restart_on_failure` or `timeout`.

        Raises:
          ImportError: If Ray is not installed.
          ValueError: If an option is invalid or the spaces differ.
          TimeoutError: If the cluster cannot host the actors in time.
          RayEnvironmentError: If a constructor raised.
        """
        envs = ray_environments(constructors, envs_per_actor=envs_per_actor, **options)
        try:
            super().__init__(envs, blocking=False)
        except BaseException:
            for env in envs:
                env.close(timeout=0)
            raise


def ray_environments(
        constructors, envs_per_actor=1, num_cpus_per_actor=1, placement='spread',
        address=None, restart_on_failure=False, startup_timeout=60.0,
        timeout=contract.DEFAULT_TIMEOUT):
    """Start Ray actors hosting environments and return one handle per environment.

    Connects to Ray first if this process is not connected yet: to the cluster
    at `address`, or else to the one named by the RAY_ADDRESS environment
    variable, or else to a new local Ray instance. Each actor reserves its CPUs
    in one placement group, so all actors start or none do.

    Args:
      constructors: Zero-argument callables returning the environments; sent to
        the actors with cloudpickle, so anything they refer to must be
        importable on every node (install this package on every node).
      envs_per_actor: Number of environments per actor. Several environments per
        actor step in one round trip, which amortises Ray's per-call overhead.
        None chooses the fewest per actor such that the actors fit the
        cluster's CPUs.
      num_cpus_per_actor: CPUs to reserve for each actor; a fraction (say 0.5)
        lets more actors share a core.
      placement: 'spread' to distribute actors over as many nodes as possible,
        or 'pack' to fill one node before using the next.
      address: Address of a running Ray cluster, for example 'auto' or
        'ray://head:10001'; ignored if Ray is already initialised.
      restart_on_failure: If an actor dies, start a new one with fresh
        environments instead of raising `RayActorDiedError`. Every environment
        of the dead actor ends its episode: the pending or next `step` returns
        the last observation, reward 0, terminated False, truncated True and
        the info {'env_restarted': True}.
      startup_timeout: Seconds to wait for the cluster to provide the CPUs and
        for the environments to be built.
      timeout: Seconds to wait for an actor's answer to a step, reset or other
        request before stopping the actor; None waits for ever. Ctrl-C or
        SIGTERM while waiting, in any thread, raises `errors.WaitInterrupted`.

    Raises:
      ImportError: If Ray is not installed.
      ValueError: If an argument is invalid.
      TimeoutError: If the cluster cannot provide the CPUs or the environments
        are not built in time.
      RayEnvironmentError: If a constructor raised.

    Returns:
      List of `RayEnvironment`, one per constructor, in order.
    """
    constructors = list(constructors)
    _check_arguments(constructors, envs_per_actor, num_cpus_per_actor, placement)
    ray = _import_ray()
    waiting.watch_signals()
    if not ray.is_initialized():
        ray.init(address=address)
    elif address is not None:
        logging.warning(
            'Ray is already initialised; using the current cluster, not address %r.', address)
    if envs_per_actor is None:
        envs_per_actor = _envs_per_actor_to_fit(ray, len(constructors), num_cpus_per_actor)
    envs_per_actor = int(envs_per_actor)
    num_actors = math.ceil(len(constructors) / envs_per_actor)
    reservation = _reserve_cpus(
        ray, num_actors, num_cpus_per_actor, placement, startup_timeout)
    hosts = []
    try:
        for actor_index in range(num_actors):
            start = actor_index * envs_per_actor
            hosts.append(_ActorHost(
                ray, reservation, actor_index, start, num_cpus_per_actor,
                constructors[start:start + envs_per_actor], restart_on_failure,
                startup_timeout, timeout))
        for host in hosts:
            host.wait_until_built()
    except BaseException:
        for host in hosts:
            host.close_all()
        reservation.release()
        raise
    return [RayEnvironment(host, index) for host in hosts for index in range(host.size)]


def _envs_per_actor_to_fit(ray, num_envs, num_cpus_per_actor):
    """Fewest environments per actor such that the actors fit the cluster's CPUs."""
    cluster_cpus = ray.cluster_resources().get('CPU', 1)
    max_actors = max(1, int(cluster_cpus // num_cpus_per_actor))
    return math.ceil(num_envs / max_actors)


def _check_arguments(constructors, envs_per_actor, num_cpus_per_actor, placement):
    """Raise a ValueError or TypeError naming the first invalid argument."""
    contract.check_constructors(constructors, 'ray_environments')
    is_integer = isinstance(envs_per_actor, numbers.Integral) and not isinstance(
        envs_per_actor, bool)
    if envs_per_actor is not None and (not is_integer or envs_per_actor < 1):
        raise ValueError(f'envs_per_actor must be a positive integer, got {envs_per_actor!r}.')
    if not isinstance(num_cpus_per_actor, numbers.Real) or not num_cpus_per_actor > 0:
        raise ValueError(
            f'num_cpus_per_actor must be a positive number (fractions like 0.5 are fine), '
            f'got {num_cpus_per_actor!r}.')
    if placement not in _PLACEMENT_STRATEGIES:
        raise ValueError(
            f"placement must be one of {sorted(_PLACEMENT_STRATEGIES)}, got {placement!r}.")


def _import_ray():
    """Import Ray, or explain how to install it."""
    try:
        import ray  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise ImportError(f'{_INSTALL_HINT} (import failed: {error}).') from error
    return ray


def _reserve_cpus(ray, num_actors, num_cpus_per_actor, placement, timeout):
    """Create a placement group with one CPU bundle per actor and wait for it."""
    bundles = [{'CPU': num_cpus_per_actor}] * num_actors
    placement_group = ray.util.placement_group(
        bundles, strategy=_PLACEMENT_STRATEGIES[placement])
    ready, _ = ray.wait([placement_group.ready()], timeout=timeout)
    if not ready:
        ray.util.remove_placement_group(placement_group)
        available = ray.cluster_resources().get('CPU', 0)
        raise TimeoutError(
            f'The Ray cluster did not provide {num_actors} actors x {num_cpus_per_actor} '
            f'CPUs = {num_actors * num_cpus_per_actor} CPUs within {timeout} s; it has '
            f'{available} CPUs in total. Lower num_cpus_per_actor, raise envs_per_actor, '
            f'or add nodes.')
    return _CpuReservation(ray, placement_group, num_actors)


class _CpuReservation:
    """The placement group holding the actors' CPUs; removed after the last actor."""

    def __init__(self, ray, placement_group, num_actors):
        self._ray = ray
        self._placement_group = placement_group
        self._open_actors = num_actors
        self._lock = threading.Lock()

    def scheduling_strategy(self, actor_index):
        """Scheduling strategy that places an actor into its bundle."""
        strategies = self._ray.util.scheduling_strategies
        return strategies.PlacementGroupSchedulingStrategy(
            self._placement_group, placement_group_bundle_index=actor_index)

    def actor_closed(self):
        """Note that an actor ended; release the reservation after the last."""
        with self._lock:
            self._open_actors -= 1
            if self._open_actors == 0:
                self.release()

    def release(self):
        """Remove the placement group, freeing its CPUs; safe to call twice."""
        if self._placement_group is not None:
            self._ray.util.remove_placement_group(self._placement_group)
            self._placement_group = None


class _Batch:
    """Requests for the environments of one actor, sent in one remote call.

    Attributes:
      requests: Dict from environment index to its `remote.Request`.
      outcomes: Dict from environment index to its outcome, a pair (value,
        failure) as returned by `remote.serve_request`; filled when the batch
        is resolved, or earlier for requests answered without the actor.
      reference: Ray object reference of the remote call, once sent.
      generation: Which actor of the host the batch was sent to.
      sent: Whether the batch has been sent.
    """

    def __init__(self):
        self.requests = {}
        self.outcomes = {}
        self.reference = None
        self.generation = None
        self.sent = False


class _ActorHost:
    """Client side of one actor: batches requests and handles the actor's death."""

    def __init__(
            self, ray, reservation, actor_index, first_env, num_cpus, constructors,
            restart_on_failure, startup_timeout, timeout):
        """Start the actor; its environments are built in the background.

        Args:
          ray: The Ray module.
          reservation: `_CpuReservation` holding this actor's CPUs.
          actor_index: Index of the actor and of its bundle in the group.
          first_env: Index of this actor's first environment among all created
            together, for error messages.
          num_cpus: CPUs of the actor.
          constructors: Constructors of the actor's environments.
          restart_on_failure: Replace the actor when it dies instead of raising.
          startup_timeout: Seconds to wait for an actor's environments to be built.
          timeout: Seconds to wait for the answer to a request, or None.
        """
        self._ray = ray
        self._reservation = reservation
        self._actor_index = actor_index
        self._first_env = first_env
        self._num_cpus = num_cpus
        self._constructors = constructors
        self._restart_on_failure = restart_on_failure
        self._startup_timeout = startup_timeout
        self._timeout = timeout
        self._lock = threading.RLock()
        self._open = set(range(len(constructors)))
        self._batch = _Batch()
        self._last_observs = {}
        # Environments of a replaced actor whose next step must report the restart.
        self._restarted = set()
        self._generation = 0
        self._died_error = None
        self._actor, self._built = self._start_actor()

    @property
    def size(self):
        """Number of environments hosted."""
        return len(self._constructors)

    def wait_until_built(self):
        """Wait for the environments to be built; raise if a constructor failed."""
        self._wait_until_built(self._built, 'building the environments')

    def submit(self, index, request):
        """Queue a request for environment `index`; return a promise of its result."""
        with self._lock:
            if index not in self._open:
                raise RuntimeError(
                    f'Cannot {request.description}: the Ray environment is closed.')
            if self._died_error:
                raise RayActorDiedError(str(self._died_error))
            if index in self._batch.requests:
                self._send()
            batch = self._batch
            batch.requests[index] = request
            if self._open <= batch.requests.keys():
                self._send()
            return functools.partial(self._resolve, batch, index)

    def close(self, index, timeout):
        """Close environment `index`; end the actor after its last environment."""
        with self._lock:
            if index not in self._open:
                return
            self._open.discard(index)
            if not self._open:
                self.close_all(timeout)

    def close_all(self, timeout=contract.CLOSE_TIMEOUT):
        """Close the environments politely for `timeout` seconds, then end the actor.

        Idempotent.
        """
        with self._lock:
            self._open.clear()
            if self._actor is None:
                return
            if not self._died_error and timeout > 0:
                try:
                    self._ray.get(self._actor.close.remote(), timeout=timeout)
                except Exception:  # pylint: disable=broad-except
                    pass  # Ending the actor below closes what remains.
            self._ray.kill(self._actor)
            self._actor = None
            self._reservation.actor_closed()

    def _start_actor(self):
        """Start an actor in this host's bundle; return it and its build reference."""
        actor_class = _remote_host_class(self._ray)
        actor = actor_class.options(
            num_cpus=self._num_cpus, max_restarts=0,
            scheduling_strategy=self._reservation.scheduling_strategy(self._actor_index),
        ).remote(self._constructors)
        return actor, actor.build.remote()

    def _send(self):
        """Send the collected batch to the actor and start a new one."""
        batch, self._batch = self._batch, _Batch()
        batch.sent = True
        batch.generation = self._generation
        for index, request in batch.requests.items():
            if index in self._restarted:
                if request.calls('step'):
                    batch.outcomes[index] = self._restart_outcome(index)
                if request.calls('step') or request.calls('reset'):
                    self._restarted.discard(index)
        remote = [(index, request) for index, request in batch.requests.items()
                  if index not in batch.outcomes]
        if remote:
            batch.reference = self._actor.run.remote(remote)

    def _resolve(self, batch, index):
        """Return the result of the request of environment `index` in `batch`."""
        with self._lock:
            if not batch.sent or index not in batch.outcomes:
                if self._actor is None:
                    raise RuntimeError(
                        f'Cannot finish {batch.requests[index].description}: the Ray '
                        f'environment is closed.')
                if not batch.sent:
                    self._send()
                if index not in batch.outcomes:
                    self._collect(batch)
            request = batch.requests[index]
            value, failure = batch.outcomes[index]
            if failure is not None:
                raise RayEnvironmentError.from_failure(
                    failure, f'raised in environment {self._first_env + index} of '
                    f'{self._name()} while {request.description}')
            if request.calls('step') or request.calls('reset'):
                self._last_observs[index] = value[0]
            return value

    def _collect(self, batch):
        """Fetch the outcomes of a sent batch, surviving a dead actor if asked to."""
        if self._died_error:
            raise RayActorDiedError(str(self._died_error))
        try:
            outcomes = self._get(batch.reference, self._describe_batch(batch))
        except RayActorDiedError as error:
            if not self._restart_on_failure:
                self._died_error = error
                raise
            try:
                if batch.generation == self._generation:
                    self._restart(error)
                outcomes = self._redo(batch)
            except (RayActorDiedError, RayEnvironmentError, TimeoutError) as restart_error:
                self._died_error = restart_error
                raise
        batch.outcomes.update(outcomes)

    def _get(self, reference, description):
        """Get a remote result within the timeout.

        Raises:
          RayActorDiedError: If the actor died.
          WorkerTimeoutError: If the actor did not answer in time; it is stopped.
          WaitInterrupted: If Ctrl-C or SIGTERM arrived meanwhile.
        """
        waiting.discard_handled_signals()
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while not self._ray.wait([reference], timeout=_POLL_SECONDS)[0]:
            waiting.raise_if_interrupted(f'{self._name()} {description}')
            if deadline is not None and time.monotonic() >= deadline:
                self._died_error = errors.WorkerTimeoutError(
                    f'Timed out after {self._timeout} s: {self._name()} did not finish '
                    f'{description}. The actor was stopped. If the environment is only '
                    f'slow, raise the timeout.')
                self._ray.kill(self._actor)
                raise self._died_error
        try:
            return self._ray.get(reference)
        except self._ray.exceptions.RayActorError as error:
            hint = '' if self._restart_on_failure else (
                ' Pass restart_on_failure=True to restart it instead.')
            raise RayActorDiedError(
                f'{self._name()} died while {description}.{hint} Ray says: {error}') from error

    def _restart(self, error):
        """Replace the dead actor by a new one with freshly reset environments."""
        logging.warning('Restarting %s: %s', self._name(), error)
        self._ray.kill(self._actor)
        self._generation += 1
        self._actor, built = self._start_actor()
        self._wait_until_built(built, 'rebuilding the environments after a failure')
        resets = self._get(
            self._actor.run.remote(
                [(index, remote.Request.call('reset')) for index in range(self.size)]),
            'resetting the environments after a failure')
        for index, (value, failure) in resets.items():
            if index not in self._last_observs and failure is None:
                self._last_observs[index] = value[0]
        self._restarted = set(self._open)

    def _redo(self, batch):
        """Outcomes for a batch lost with its actor: steps end, the rest is redone."""
        outcomes = {}
        redo = []
        for index, request in batch.requests.items():
            if index in batch.outcomes:
                continue
            if request.calls('step') or request.calls('reset'):
                self._restarted.discard(index)
            if request.calls('step'):
                outcomes[index] = self._restart_outcome(index)
            else:
                redo.append((index, request))
        if redo:
            outcomes.update(self._get(
                self._actor.run.remote(redo), 'redoing requests after a failure'))
        return outcomes

    def _restart_outcome(self, index):
        """The step outcome that ends the episode of a restarted environment."""
        transition = (self._last_observs.get(index), 0.0, False, True, {'env_restarted': True})
        return transition, None

    def _wait_until_built(self, built, description):
        """Wait for the build outcomes; raise the first constructor exception."""
        ready, _ = self._ray.wait([built], timeout=self._startup_timeout)
        if not ready:
            raise TimeoutError(
                f'{self._name()} did not finish {description} within '
                f'{self._startup_timeout} s (startup_timeout); is a node missing?')
        for index, (_, failure) in self._get(built, description).items():
            if failure is not None:
                raise RayEnvironmentError.from_failure(
                    failure, f'raised by the constructor of environment '
                    f'{self._first_env + index} in {self._name()}')

    def _describe_batch(self, batch):
        """Describe the requests of a batch for error messages."""
        return ', '.join(
            f'{request.description} on environment {self._first_env + index}'
            for index, request in batch.requests.items())

    def _name(self):
        """Names the actor and its environments for messages."""
        return (f'Ray actor {self._actor_index} (environments {self._first_env} to '
                f'{self._first_env + self.size - 1})')


class _EnvironmentHost:
    """Body of the Ray actor: builds several environments and serves requests."""

    def __init__(self, constructors):
        self._constructors = constructors
        self._envs = {}

    def build(self):
        """Construct the environments; return the outcome of each by index.

        An outcome is a pair (None, failure) as in `remote.serve_request`.
        """
        outcomes = {}
        for index, constructor in enumerate(self._constructors):
            try:
                self._envs[index] = constructor()
                outcomes[index] = (None, None)
            except Exception as error:  # pylint: disable=broad-except
                outcomes[index] = (None, errors.describe_exception(error))
        return outcomes

    def run(self, requests):
        """Serve a list of (index, `remote.Request`) pairs; return the outcomes by index."""
        return {
            index: remote.serve_request(self._envs[index], request)
            for index, request in requests}

    def close(self):
        """Close every environment, ignoring their errors."""
        for env in self._envs.values():
            try:
                env.close()
            except Exception:  # pylint: disable=broad-except
                traceback.print_exc()
        self._envs.clear()


@functools.lru_cache(maxsize=None)
def _remote_host_class(ray):
    """The Ray actor class of `_EnvironmentHost`, made once."""
    return ray.remote(_EnvironmentHost)
