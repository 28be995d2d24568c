"""The contract of every batch environment, and the checks its backends share."""

import numpy as np

from agents.tools.envs import access
from agents.tools.envs import batching

# Seconds a process backend waits for a worker's answer before it gives up on
# it; generous for real tasks, whose steps and resets take milliseconds.
DEFAULT_TIMEOUT = 60.0
# Seconds workers get at least to build their environments (starting Python,
# importing and constructing), which can take long on a busy machine.
STARTUP_TIMEOUT = 60.0
# Seconds workers get to close their environments and exit when a batch closes.
CLOSE_TIMEOUT = 5.0


class BaseBatchEnv:
    """Environments stepped and reset together as one batch: what every backend does.

    Implemented by `BatchEnv` (environments in this process or in
    `ExternalProcess` workers), `ProcessBatchEnv`, `ParallelBatchEnv`,
    `RayBatchEnv` and `EnvpoolBatchEnv`; the checks and errors described here
    are written once, in this class.

    Spaces: `observation_space` and `action_space` are the spaces of one
    environment, which all environments of the batch share (checked when the
    batch is built). Observations and actions are batched as Gymnasium's vector
    environments batch them (see `batching`): an array with the environments
    along the first axis per leaf of the space, in dicts and tuples for Dict and
    Tuple spaces. `len(batch)` is the number of environments.

    `step(actions, indices)` steps the environments at `indices` (all if None)
    with one action each and returns their batched observations in the
    space's dtypes, rewards in `reward_dtype`, bool terminated and truncated
    flags, and a tuple of one info dict per environment (empty where the
    backend does not return infos), all in the order of `indices`.
    `reset(indices, seeds, options)` resets the environments at `indices` (all
    if None) and returns their batched first observations, in the order of
    `indices`, and a tuple of their info dicts. Reset an environment whose
    episode ended before stepping it again. `step_or_reset(actions, mask)`
    resets the environments of a mask and steps the others in one call, as
    Gymnasium's next-step autoreset does.

    Rewards are float32 (what the learners here take) unless `reward_dtype` is
    set to float64 (`batch.reward_dtype = np.float64`), which returns each
    environment's reward exactly, as Gymnasium's vector environments do;
    backends keep float64 inside.

    `apply(function, *args, indices)` runs `function(env, *args)` on each
    environment at `indices` where it runs and returns the results; `call`
    calls a method (or reads an attribute) of every environment with it. The
    adapters built on the batch (`vector_env`, `sb3_vec_env`) read, set and call
    attributes of single environments this way.

    Values of spaces without a fixed shape and dtype (Graph, Sequence, Text,
    OneOf, spaces of your own) are held in object arrays, one value per
    environment, on the backends that pass values one by one
    (`takes_variable_size_spaces`: inprocess, process, ray); the others refuse
    such spaces when the batch is built. Float actions for an integer Box
    space are converted to its dtype, as NumPy converts (toward zero), since
    policies for Box spaces emit floats.

    Errors: environments with different spaces raise `SpacesDifferError` (a
    ValueError). A wrong batch of actions, an index out of range or a wrong
    number of seeds raises ValueError (TypeError for float actions of a
    Discrete, MultiDiscrete or MultiBinary space; `batching.NotABatchError`,
    both, for a scalar) before any environment is touched. An exception in an environment is
    raised as itself when the environment runs in this process, and as
    `errors.WorkerError`, naming the exception and carrying the worker's
    traceback, when it runs in a worker; after a reset the batch is usable
    again. A worker that dies raises `errors.WorkerDiedError`, and the batch
    closes itself. `close()` frees every process and resource, may be called
    more than once, and afterwards every call raises RuntimeError. A batch is a
    context manager that closes on exit.

    Process backends take a `timeout` option (`DEFAULT_TIMEOUT` seconds, None
    for none): a worker that does not answer a step, reset or other call in
    time raises `errors.WorkerTimeoutError` naming the environments, the worker
    and the call, and the batch stops its workers and closes, leaving no
    process, shared memory or file descriptor behind. Building the
    environments may take `STARTUP_TIMEOUT` seconds, or the timeout if longer.
    Ctrl-C or SIGTERM while the batch waits for a worker, in any thread, raises
    `errors.WaitInterrupted` within milliseconds and closes the batch the same
    way (see `waiting`).

    Public attributes the batch does not define are read from the first
    environment (`batch.spec`), and `batch[i]` reaches environment `i`, where
    the backend allows it.

    A backend calls `_set_spaces` once it knows the environments' spaces and
    implements `_step`, `_reset`, `_close` and, if it can, `__getitem__`,
    `_apply` and a faster `_step_or_reset`. It closes itself with `_shut_down`
    after a worker died, timed out or a wait was interrupted.
    """

    # The dtype of the rewards `step` returns; float32 or float64.
    reward_dtype = np.float32
    # Whether the backend takes spaces without a fixed shape and dtype (Graph,
    # Sequence, Text, OneOf, spaces of your own), which need no shared memory.
    takes_variable_size_spaces = False

    def __init__(self):
        self._closed = False
        self._size = 0

    def __len__(self):
        """Number of environments in the batch."""
        return self._size

    def __getitem__(self, index):
        """Environment `index`, or a view reading its attributes from where it runs."""
        raise TypeError(f'{type(self).__name__} gives no access to single environments.')

    def __getattr__(self, name):
        """Read public attributes the batch does not define from the first environment."""
        if name.startswith('_'):
            raise AttributeError(name)
        try:
            first = self[0]
        except TypeError:
            raise AttributeError(
                f'{type(self).__name__} has no attribute {name!r}.') from None
        return getattr(first, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def environments(self):
        """List of the environments, as adapters that stand in for a list of them give it.

        The environments themselves where they run in this process (inprocess);
        elsewhere what `batch[i]` gives: handles or views that read their
        attributes where they run.

        Raises:
          AttributeError: If the backend gives no access to single environments.
        """
        if not self.reaches_environments:
            raise AttributeError(f'{type(self).__name__} gives no access to its environments.')
        return [self[index] for index in range(self._size)]

    @property
    def reaches_environments(self):
        """Whether `apply`, `call` and `batch[i]` reach single environments (not on envpool)."""
        return type(self)._apply is not BaseBatchEnv._apply

    @property
    def closed(self):
        """Whether the batch was closed, by `close()` or after a worker died."""
        return self._closed

    def step(self, actions, indices=None):
        """Step some or all environments, each with its action.

        Args:
          actions: Batch of actions, one per stepped environment along the first
            axis, in the order of `indices`.
          indices: Indices of the environments to step; all if None.

        Raises:
          ValueError: If an index is out of range or repeated, or the batch size
            or the shape of the actions is wrong.
          TypeError: If an integer action space gets non-integer actions.
          RuntimeError: If the batch is closed.

        Returns:
          Tuple of the batched observations, rewards in `reward_dtype`, bool
          terminated flags, bool truncated flags, and a tuple of info dicts of
          the stepped environments, in the order of `indices`.
        """
        self._check_open()
        if indices is not None:
            indices = self._check_indices(indices)
            if len(set(indices)) < len(indices):
                raise ValueError(f'Cannot step an environment twice at once: indices {indices}.')
        actions = self._action_layout.check(
            actions, self._size if indices is None else len(indices))
        observ, reward, terminated, truncated, infos = self._step(actions, indices)
        return observ, np.asarray(reward, self.reward_dtype), terminated, truncated, infos

    def step_or_reset(self, actions, reset_mask):
        """Reset the environments of `reset_mask` and step all others, in one call.

        This is Gymnasium's next-step autoreset: an environment whose episode
        ended is reset in place of its next step. The `parallel` backend, which
        resets ended episodes ahead, does it in one exchange with its workers.

        Args:
          actions: Batch of actions for every environment; those of the reset
            environments are checked but not used.
          reset_mask: Bool array with one entry per environment, True for the
            environments to reset (without seeds or options).

        Raises:
          ValueError: If the mask or the batch of actions has the wrong shape.
          TypeError: If the mask is not bool, or an integer action space gets
            non-integer actions.
          RuntimeError: If the batch is closed.

        Returns:
          Tuple of what `step` returns for the whole batch: the observations
          (first ones of the reset environments), rewards in `reward_dtype` (0
          for the reset environments), bool terminated and truncated flags
          (False for the reset environments), and a tuple of one info dict per
          environment (the reset info of the reset environments).
        """
        self._check_open()
        reset_mask = np.asarray(reset_mask)
        if reset_mask.dtype != np.bool_:
            raise TypeError(f'reset_mask must be a bool array, got dtype {reset_mask.dtype}.')
        if reset_mask.shape != (self._size,):
            raise ValueError(
                f'reset_mask must have one entry per environment, shape ({self._size},), '
                f'got shape {reset_mask.shape}.')
        if not reset_mask.any():
            return self.step(actions)
        actions = self._action_layout.check(actions, self._size)
        observ, reward, terminated, truncated, infos = self._step_or_reset(actions, reset_mask)
        return observ, np.asarray(reward, self.reward_dtype), terminated, truncated, infos

    def reset(self, indices=None, seeds=None, options=None):
        """Reset some or all environments.

        Args:
          indices: Indices of the environments to reset; all if None.
          seeds: Optional sequence of one seed (or None) per reset environment.
          options: Optional dict of reset options passed to every reset environment.

        Raises:
          ValueError: If an index is out of range or the seeds do not match.
          RuntimeError: If the batch is closed.

        Returns:
          Tuple of the batched first observations of the reset environments and a
          tuple of their info dicts.
        """
        self._check_open()
        indices = self._check_indices(indices)
        return self._reset(indices, self._check_seeds(seeds, len(indices)), options)

    def apply(self, function, /, *args, indices=None):
        """Run a function on environments where they run, and return its results.

        Args:
          function: Function called as `function(env, *args)` for each
            environment. Process backends send it by reference, so define it at
            the top level of a module (as the functions of `access`).
          *args: Further arguments of the function, the same for every
            environment; sent to the workers by pickling.
          indices: Indices of the environments; all if None.

        Raises:
          ValueError: If an index is out of range.
          TypeError: If the backend gives no access to single environments.
          RuntimeError: If the batch is closed.

        Returns:
          List of the function's results, in the order of `indices`; an
          exception in the function is raised as one in `step`.
        """
        self._check_open()
        return self._apply(function, args, self._check_indices(indices))

    def call(self, name, /, *args, **kwargs):
        """Call a method of every environment, or read an attribute that is not callable.

        Args:
          name: Name of the method or attribute, looked up through Gymnasium wrappers.
          *args: Positional arguments of the method.
          **kwargs: Keyword arguments of the method.

        Returns:
          List of the results, one per environment.
        """
        return self.apply(access.call_or_read, name, args, kwargs)

    def close(self):
        """Close the environments and free their processes; safe to call more than once."""
        self._shut_down(CLOSE_TIMEOUT)

    def _set_spaces(self, spaces):
        """Check that the environments' spaces agree and take them as the batch's.

        Args:
          spaces: List of (observation space, action space), one per environment.

        Raises:
          ValueError: If there are no environments or their spaces differ.
          TypeError: If a space cannot be batched.
        """
        if not spaces:
            raise ValueError(f'{type(self).__name__} needs at least one environment.')
        observation_space, action_space = spaces[0]
        for index, (observ, action) in enumerate(spaces[1:], 1):
            if observ != observation_space:
                raise SpacesDifferError(
                    'observation', f'All environments must have the same observation space: '
                    f'env 0 has {observation_space} but env {index} has {observ}.')
            if action != action_space:
                raise SpacesDifferError(
                    'action', f'All environments must have the same action space: env 0 has '
                    f'{action_space} but env {index} has {action}.')
        self._observ_layout = batching.BatchLayout(observation_space, 'observation')
        self._action_layout = batching.BatchLayout(action_space, 'action')
        for layout, kind in ((self._observ_layout, 'observation'), (self._action_layout, 'action')):
            if not (layout.fixed_size or self.takes_variable_size_spaces):
                raise TypeError(
                    f'{type(self).__name__} cannot share {kind}s of the space {layout.space} in '
                    f'memory: {layout.describe_variable_leaves()} no fixed shape and dtype; the '
                    f'inprocess, process and ray backends take such spaces. (Gymnasium says: '
                    f'it has a dynamic shape so its not possible to make a static shared '
                    f'memory.)')
        self.observation_space = observation_space
        self.action_space = action_space
        self._size = len(spaces)

    def own_observations(self, indices):
        """The observations the environments at `indices` returned from their last step.

        Each as the environment returned it (a Python number, an array of its
        own dtype), where the batch holds it converted to the space's dtype.
        The adapters give these as last observations of ended episodes, as the
        peers do.

        Returns:
          List of the observations in the order of `indices`, or None if the
          backend keeps only the batch (as the shared-memory `parallel` does).
        """
        del indices
        return None

    def _step(self, actions, indices):
        """Step environments with checked actions.

        Args:
          actions: Checked batch of actions, one per stepped environment.
          indices: List of the checked indices of the environments to step, or
            None for all.

        Returns:
          What `step` returns, with rewards of any float dtype (float64 keeps
          them exact).
        """
        raise NotImplementedError

    def _reset(self, indices, seeds, options):
        """Reset the environments at checked indices with one seed (or None) each.

        Returns:
          What `reset` returns.
        """
        raise NotImplementedError

    def _step_or_reset(self, actions, reset_mask):
        """Reset the environments of a checked mask, then step the others.

        Backends that can do both at once override this.

        Returns:
          What `step_or_reset` returns, with rewards of any float dtype.
        """
        reset = np.flatnonzero(reset_mask).tolist()
        stepped = np.flatnonzero(~reset_mask).tolist()
        observ = self._observ_layout.empty(self._size)
        reward = np.zeros(self._size)
        terminated = np.zeros(self._size, bool)
        truncated = np.zeros(self._size, bool)
        infos = [None] * self._size
        first_observ, reset_infos = self._reset(reset, [None] * len(reset), None)
        self._observ_layout.assign(observ, reset, first_observ)
        for index, info in zip(reset, reset_infos):
            infos[index] = info
        if stepped:
            step_observ, reward[stepped], terminated[stepped], truncated[stepped], step_infos = (
                self._step(self._action_layout.select(actions, stepped), stepped))
            self._observ_layout.assign(observ, stepped, step_observ)
            for index, info in zip(stepped, step_infos):
                infos[index] = info
        return observ, reward, terminated, truncated, tuple(infos)

    def _apply(self, function, args, indices):
        """Run `function(env, *args)` for the environments at checked indices.

        Returns:
          What `apply` returns.
        """
        del function, args, indices
        raise TypeError(f'{type(self).__name__} gives no access to single environments.')

    def _shut_down(self, timeout):
        """Close the batch, giving workers `timeout` seconds to exit before stopping them."""
        if self._closed:
            return
        self._closed = True
        self._close(timeout)

    def _close(self, timeout):
        """Close the environments and free the backend's resources, once.

        Args:
          timeout: Seconds the workers get to close their environments and
            exit before they are stopped; 0 after a timeout or an interruption.
        """
        raise NotImplementedError

    def _check_open(self):
        if self._closed:
            raise RuntimeError(
                f'The {type(self).__name__} is closed (by close() or because a worker '
                f'died); create a new one.')

    def _check_indices(self, indices):
        """Return the indices as a list of ints after checking their range."""
        if indices is None:
            return list(range(self._size))
        indices = [int(index) for index in np.asarray(indices).reshape(-1).tolist()]
        for index in indices:
            if not 0 <= index < self._size:
                raise ValueError(
                    f'Environment index {index} is out of range: the batch has {self._size} '
                    f'environments.')
        return indices

    def _check_seeds(self, seeds, count):
        """Return one Python int or None per environment; Gymnasium refuses NumPy ints."""
        if seeds is None:
            return [None] * count
        seeds = as_seeds(seeds)
        if len(seeds) != count:
            raise ValueError(f'Got {len(seeds)} seeds for {count} environments to reset.')
        return seeds


class SpacesDifferError(ValueError, RuntimeError):
    """The environments of a batch have different observation or action spaces.

    A ValueError, as every bad input, and the RuntimeError that Gymnasium's
    vector environments raise for it.

    Attributes:
      kind: 'observation' or 'action'.
    """

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def check_distinct_environments(batch):
    """Refuse a batch in which two slots hold one environment object.

    A constructor that returns an environment it closes over, rather than a
    new one, gives every slot of its process that one object, whose state
    they then share silently. The check runs where the environments live;
    backends that do not reach single environments (envpool) build their own.

    Raises:
      ValueError: If two environments of the batch are the same object.
    """
    if not batch.reaches_environments:
        return
    first_slot = {}
    for index, identity in enumerate(batch.apply(access.identity)):
        if identity in first_slot:
            raise ValueError(
                f'Environments {first_slot[identity]} and {index} are the same object: each '
                f'constructor must return a new environment, not one it shares '
                f'(lambda: env gives every slot that one env).')
        first_slot[identity] = index


def startup_timeout(timeout):
    """Seconds to wait for workers to build their environments, given the timeout."""
    return None if timeout is None else max(timeout, STARTUP_TIMEOUT)


def check_constructors(constructors, backend):
    """Return the environment constructors as a list after checking them.

    Args:
      constructors: Iterable of zero-argument callables returning environments.
      backend: Name of the backend or function, for the messages.

    Raises:
      ValueError: If there is no constructor.
      TypeError: If a constructor is not callable.
    """
    constructors = list(constructors)
    if not constructors:
        raise ValueError(f'{backend} needs at least one environment constructor.')
    for index, constructor in enumerate(constructors):
        if not callable(constructor):
            raise TypeError(
                f'Environment constructor {index} must be a zero-argument callable that '
                f'returns an environment, got {constructor!r}.')
    return constructors


def as_seeds(seeds):
    """List of Python ints (or None) from any sequence of seeds, as Gymnasium requires."""
    return [None if seed is None else int(seed) for seed in seeds]
