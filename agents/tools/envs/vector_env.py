"""`VectorEnv`: any backend of the batch contract as a Gymnasium vector environment."""

import functools
import numbers

import gymnasium
from gymnasium.spaces.utils import is_space_dtype_shape_equiv
from gymnasium.vector import AutoresetMode
from gymnasium.vector import utils as vector_utils
import numpy as np

from agents.tools.envs import access
from agents.tools.envs import backends
from agents.tools.envs import batching
from agents.tools.envs import contract
from agents.tools.envs import final_observations


class VectorEnv(gymnasium.vector.VectorEnv):
    """A Gymnasium `VectorEnv` whose environments run on a backend of the batch contract.

    Code written for Gymnasium's vector environments (CleanRL-style loops,
    wrappers from `gymnasium.wrappers.vector`) runs unchanged on the `parallel`
    backend's shared-memory workers, or on any other backend:

        envs = VectorEnv([lambda: gymnasium.make('CartPole-v1')] * 8)
        observ, info = envs.reset(seed=0)
        observ, reward, terminated, truncated, info = envs.step(envs.action_space.sample())

    It behaves as `gymnasium.vector.SyncVectorEnv` with the same constructors:
    from the same seeds and actions it returns bit-identical observations,
    float64 rewards, flags and infos (a dict of arrays with `_key` masks). The
    autoreset mode is declared in `metadata['autoreset_mode']`: NEXT_STEP (the
    default) resets an environment in the step after its episode ended, which
    returns its first observation, reward 0 and no flags and ignores its
    action; SAME_STEP resets it in the same step and returns the last
    observation and info under `info['final_obs']` and `info['final_info']`;
    DISABLED leaves resets to `reset(options={'reset_mask': mask})`. `reset`
    takes one seed or a list, and options, whose `reset_mask` it removes as
    SyncVectorEnv does. `call`, `get_attr`, `set_attr` and `render` reach the
    environments where they run, through their wrappers. It takes
    SyncVectorEnv's arguments (`copy`, `observation_mode` 'same', 'different'
    or a pair of spaces) and every space SyncVectorEnv takes: Graph,
    Sequence, Text, OneOf and spaces of your own are batched in tuples, as
    SyncVectorEnv batches them, on the inprocess, process and ray backends.
    Constructors that return one shared environment object are refused with
    ValueError, as SB3's DummyVecEnv refuses them. Different spaces raise
    RuntimeError and a scalar action TypeError, as in SyncVectorEnv (both are
    ValueErrors too).

    What differs from SyncVectorEnv:
    - An exception in an environment that runs in a worker process arrives as
      `WorkerError` (naming the exception, with the worker's traceback); a
      worker that dies or does not answer in time raises `WorkerDiedError` or
      `WorkerTimeoutError`, after which the backend has closed itself and
      `closed` is True.
    - `envs` holds the environments themselves only on the inprocess backend;
      elsewhere handles or views that read their attributes where they run.
    - Dict actions reach each environment with the keys in the order of
      `single_action_space`; SyncVectorEnv iterates the batched space, whose
      keys Gymnasium sorts.
    - Observations are new arrays at every call whatever `copy` says.
    - On the shared-memory `parallel` backend, spaces without a fixed shape
      and dtype are refused with TypeError, naming the backends that take
      them; and an environment is reset as soon as its episode ends, so a
      method called in between sees it reset a step earlier. Its
      environments are built in `final_observations.KeepFinal`, which carries
      the last observation of an episode, as the environment returned it, to
      `info['final_obs']`.
    """

    def __init__(
            self, env_fns, copy=True, observation_mode='same',
            autoreset_mode=AutoresetMode.NEXT_STEP, *, backend='parallel', **options):
        """Build the environments on the backend.

        Args:
          env_fns: Zero-argument callables, one per environment, each returning
            a Gymnasium environment; all with the same spaces.
          copy: Accepted as SyncVectorEnv accepts it; every call returns
            observations of its own, as SyncVectorEnv does with True.
          observation_mode: 'same' for equal observation spaces; 'different'
            for spaces of one type, shape and dtype but other bounds, batched
            with `batch_differing_spaces`; or a pair of the batched and the
            single observation space.
          autoreset_mode: An `AutoresetMode` or its value ('NextStep',
            'SameStep', 'Disabled').
          backend: Name of the backend, a key of `envs.BACKENDS`.
          **options: Options of the backend, such as `num_workers` or
            `timeout`.

        Raises:
          ValueError: If the backend, observation mode or autoreset mode is
            unknown, or there are no constructors.
          RuntimeError: If the spaces differ (`contract.SpacesDifferError`,
            also a ValueError).
        """
        self._closed = False
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise ValueError(
                f'Unknown autoreset_mode {autoreset_mode!r}; choose one of '
                f'{", ".join(mode.value for mode in AutoresetMode)}.') from None
        _check_observation_mode(observation_mode)
        self.copy = copy
        self.observation_mode = observation_mode
        if backend == 'parallel' and self.autoreset_mode is AutoresetMode.DISABLED:
            # Resets come with options (what remains of the reset_mask's), which
            # would reset an environment the backend had reset ahead a second time.
            options.setdefault('auto_reset', False)
        if backend == 'parallel':
            env_fns = final_observations.wrap(env_fns)
        if observation_mode != 'same':
            env_fns = [functools.partial(_ShapeAndDtypeSpace, env_fn) for env_fn in env_fns]
        try:
            self._batch = backends.make_batch_env(backend, env_fns, **options)
        except contract.SpacesDifferError as error:
            if error.kind != 'observation':
                raise
            raise contract.SpacesDifferError(
                'observation', f'{error} {_spaces_differ(observation_mode)}') from None
        self._batch.reward_dtype = np.float64
        self.backend = backend
        self.num_envs = len(self._batch)
        self.metadata = dict(getattr(self._batch, 'metadata', {}))
        self.metadata['autoreset_mode'] = self.autoreset_mode
        self.render_mode = getattr(self._batch, 'render_mode', None)
        self.single_action_space = self._batch.action_space
        self.action_space = vector_utils.batch_space(self.single_action_space, self.num_envs)
        try:
            self._set_observation_spaces(observation_mode)
        except BaseException:
            self._batch.close()
            raise
        self._observ_layout = batching.BatchLayout(self._batch.observation_space, 'observation')
        self._observ = self._observ_layout.empty(self.num_envs)
        # Environments whose episode ended in the last step and that were not reset since.
        self._ended = np.zeros(self.num_envs, bool)

    @property
    def batch(self):
        """The backend's batch environment (`contract.BaseBatchEnv`) underneath."""
        return self._batch

    @property
    def closed(self):
        """Whether `close()` was called or the backend closed itself after a failure."""
        return self._closed or self._batch.closed

    @closed.setter
    def closed(self, value):
        self._closed = value

    @property
    def envs(self):
        """List of the environments, or views of them (see `BaseBatchEnv.environments`)."""
        return self._batch.environments()

    @property
    def np_random_seed(self):
        """Tuple of the environments' seeds, as SyncVectorEnv returns them."""
        return self.get_attr('np_random_seed')

    @property
    def np_random(self):
        """Tuple of copies of the environments' random generators."""
        return self.get_attr('np_random')

    def reset(self, *, seed=None, options=None):
        """Reset all environments, or those of `options['reset_mask']`.

        Args:
          seed: None; an int, which seeds environment i with `seed + i`; or a
            list of one seed (or None) per environment.
          options: Dict of reset options passed to every reset environment. A
            `reset_mask` entry, a bool array with one entry per environment,
            is removed from it and selects the environments to reset.

        Returns:
          The batched observations (those of environments not reset are their
          last ones) and the infos of the reset environments.
        """
        seeds = self._seeds(seed)
        if options is not None and 'reset_mask' in options:
            indices = np.flatnonzero(self._reset_mask(options.pop('reset_mask')))
            first_observ, infos = self._batch.reset(
                indices, [seeds[index] for index in indices], options)
            observ = self._observ_layout.copy(self._observ)
            self._observ_layout.assign(observ, indices, first_observ)
        else:
            indices = np.arange(self.num_envs)
            observ, infos = self._batch.reset(None, seeds, options)
        self._ended[indices] = False
        self._observ = observ
        return self._observ_layout.as_tuples(observ), self._vector_info(zip(indices, infos))

    def step(self, actions):
        """Step every environment, resetting them as the autoreset mode says.

        Args:
          actions: Batch of actions, one per environment, in `action_space`.

        Returns:
          The batched observations, float64 rewards, bool terminated and
          truncated flags, and the infos.
        """
        if self._ended.any():
            if self.autoreset_mode is AutoresetMode.NEXT_STEP:
                return self._step_and_reset_ended(actions)
            if self.autoreset_mode is AutoresetMode.DISABLED:
                raise RuntimeError(
                    f'Environments {np.flatnonzero(self._ended).tolist()} ended their episodes; '
                    f"with autoreset mode DISABLED, reset them (options={{'reset_mask': ...}}) "
                    f'before stepping them again.')
        observ, reward, terminated, truncated, infos = self._batch.step(actions)
        ended = terminated | truncated
        final_observ = self._final_observations(observ, infos, np.flatnonzero(ended))
        if self.autoreset_mode is AutoresetMode.SAME_STEP and ended.any():
            info = self._reset_in_same_step(observ, infos, final_observ)
        else:
            info = self._vector_info(enumerate(infos))
        self._ended = ended
        self._observ = observ
        return self._observ_layout.as_tuples(observ), reward, terminated, truncated, info

    def render(self):
        """Tuple of the environments' renderings."""
        return tuple(self._batch.call('render'))

    def call(self, name, *args, **kwargs):
        """Call a method of every environment, or read an attribute that is not callable.

        Returns:
          Tuple of the results, one per environment.
        """
        return tuple(self._batch.call(name, *args, **kwargs))

    def get_attr(self, name):
        """Tuple of an attribute of every environment; methods are called, as in Gymnasium."""
        return self.call(name)

    def set_attr(self, name, values):
        """Set an attribute of every environment, on the wrapper that has it.

        Args:
          name: Attribute name.
          values: A list or tuple of one value per environment, or one value for all.

        Raises:
          ValueError: If a list or tuple does not have one value per environment.
        """
        if not isinstance(values, (list, tuple)):
            self._batch.apply(access.set_attribute, name, values)
            return
        if len(values) != self.num_envs:
            raise ValueError(
                f'Values must be a list or tuple with length equal to the number of '
                f'environments. Got `{len(values)}` values for {self.num_envs} environments.')
        for index, value in enumerate(values):
            self._batch.apply(access.set_attribute, name, value, indices=[index])

    def _set_observation_spaces(self, observation_mode):
        """Take the observation spaces as SyncVectorEnv does in an observation mode."""
        if observation_mode == 'same':
            self.single_observation_space = self._batch.observation_space
            self.observation_space = vector_utils.batch_space(
                self.single_observation_space, self.num_envs)
            return
        spaces = self._batch.apply(access.get_attribute, 'env.observation_space')
        if observation_mode == 'different':
            self.single_observation_space = spaces[0]
            self.observation_space = vector_utils.batch_differing_spaces(spaces)
        else:
            self.observation_space, self.single_observation_space = observation_mode
        for space in spaces:
            if not is_space_dtype_shape_equiv(space, self.single_observation_space):
                raise contract.SpacesDifferError(
                    'observation', _spaces_differ(
                        observation_mode, f', single_observation_space='
                        f'{self.single_observation_space}, sub-environment observation '
                        f'space={space}'))

    def close_extras(self, **kwargs):
        """Close the backend: its environments, processes and shared memory."""
        del kwargs
        self._batch.close()

    def _step_and_reset_ended(self, actions):
        """Reset the environments whose episode ended and step the others (NEXT_STEP)."""
        observ, reward, terminated, truncated, infos = self._batch.step_or_reset(
            actions, self._ended)
        self._ended = terminated | truncated
        self._final_observations(observ, infos, np.flatnonzero(self._ended))
        self._observ = observ
        return (self._observ_layout.as_tuples(observ), reward, terminated, truncated,
                self._vector_info(enumerate(infos)))

    def _final_observations(self, observ, infos, ended):
        """The last observations of the environments at `ended`, as they returned them.

        Takes them out of the infos on the `parallel` backend (see
        `final_observations`); rows of the batch on a backend that keeps
        nothing else.

        Returns:
          Dict from the index of each ended environment to its last observation.
        """
        own = final_observations.pop(infos, ended)
        if own is None:
            own = self._batch.own_observations(ended)
        if own is None:
            own = [self._observ_layout.row(observ, index) for index in ended]
        return dict(zip(ended, own))

    def _reset_in_same_step(self, observ, infos, final_observ):
        """Reset the environments that ended in place of their last observation (SAME_STEP).

        Args:
          observ: The batch of observations, updated in place.
          infos: The environments' step infos.
          final_observ: Dict from the index of each ended environment to its
            last observation.

        Returns:
          The infos, with the last observations and infos of the ended
          environments under 'final_obs' and 'final_info'.
        """
        ended = list(final_observ)
        first_observ, reset_infos = self._batch.reset(ended)
        self._observ_layout.assign(observ, ended, first_observ)
        reset_infos = dict(zip(ended, reset_infos))
        info = {}
        for index, env_info in enumerate(infos):
            if index in reset_infos:
                info = self._add_info(
                    info, {'final_obs': final_observ[index], 'final_info': env_info}, index)
                env_info = reset_infos[index]
            if env_info:
                info = self._add_info(info, env_info, index)
        return info

    def _vector_info(self, indexed_infos):
        """Gymnasium's dict of arrays and `_key` masks from (index, info) pairs in order."""
        info = {}
        for index, env_info in indexed_infos:
            if env_info:
                info = self._add_info(info, env_info, index)
        return info

    def _add_info(self, vector_infos, env_info, env_num):
        """Add one environment's info to the vector infos, as Gymnasium's `VectorEnv` does.

        The same arrays and `_key` masks, built faster: a mask is allocated once
        per key rather than once per key and environment, which matters for
        tasks whose every step returns an info, as MuJoCo tasks do.
        """
        for key, value in env_info.items():
            if isinstance(value, dict) and key != 'final_obs':
                array = self._add_info(vector_infos.get(key, {}), value, env_num)
            else:
                array = vector_infos.get(key)
                if array is None:
                    array = _info_array(key, value, self.num_envs)
                array[env_num] = value
            vector_infos[key] = array
            mask_key = '_' + key
            mask = vector_infos.get(mask_key)
            if mask is None:
                mask = vector_infos[mask_key] = np.zeros(self.num_envs, np.bool_)
            mask[env_num] = True
        return vector_infos

    def _seeds(self, seed):
        """One seed (or None) per environment from reset's `seed` argument."""
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, numbers.Integral):
            return [int(seed) + index for index in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f'If seeds are passed as a list the length must match num_envs='
                f'{self.num_envs} but got length={len(seeds)}.')
        return seeds

    def _reset_mask(self, mask):
        """Check `options['reset_mask']` as SyncVectorEnv does."""
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
        if mask.shape != (self.num_envs,):
            raise ValueError(
                f"`options['reset_mask']` must have shape `({self.num_envs},)`, got {mask.shape}")
        if mask.dtype != np.bool_:
            raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
        if not mask.any():
            raise ValueError(
                f"`options['reset_mask']` must contain a boolean array with at least one True "
                f'value, got reset_mask={mask}')
        return mask


def _spaces_differ(observation_mode, detail=''):
    """SyncVectorEnv's message for spaces that differ in an observation mode, quoted.

    Code that matches SyncVectorEnv's message matches this one.
    """
    if observation_mode == 'same':
        return (
            "(SyncVectorEnv says: SyncVectorEnv(..., observation_mode='same') however the "
            "sub-environments observation spaces are not equivalent. If this is intentional, "
            "use `observation_mode='different'` instead.)")
    return (
        "(SyncVectorEnv says: SyncVectorEnv(..., observation_mode='different' or custom space) "
        f"however the sub-environments observation spaces do not share a common shape and "
        f"dtype{detail}.)")


def _check_observation_mode(observation_mode):
    """Refuse an observation mode SyncVectorEnv refuses, with its messages."""
    if isinstance(observation_mode, tuple) and len(observation_mode) == 2:
        if not all(isinstance(space, gymnasium.spaces.Space) for space in observation_mode):
            raise TypeError(
                f'Expected both elements of observation_mode to be Spaces, got '
                f'{type(observation_mode[0])} and {type(observation_mode[1])}')
    elif observation_mode not in ('same', 'different'):
        raise ValueError(
            f"Invalid `observation_mode`, expected: 'same' or 'different' or tuple of single "
            f'and batch observation space, actual got {observation_mode}')


class _ShapeAndDtypeSpace(gymnasium.Wrapper):
    """An environment whose observation space shows only its structure, shapes and dtypes.

    Environments whose observation spaces differ in bounds only (SyncVectorEnv's
    observation mode 'different') show the backend equal spaces this way, and
    the backend batches them as it batches equal ones. The backends read the
    spaces through it, so it is not marked as the adapters' own wrapper (see
    `access`).
    """

    def __init__(self, env_fn):
        super().__init__(env_fn())
        self.observation_space = _shape_and_dtype(self.env.observation_space)


def _shape_and_dtype(space):
    """The widest space of the type, shape and dtype of a space."""
    spaces = gymnasium.spaces
    if isinstance(space, spaces.Dict):
        return spaces.Dict([(key, _shape_and_dtype(inner)) for key, inner in space.items()])
    if isinstance(space, spaces.Tuple):
        return spaces.Tuple([_shape_and_dtype(inner) for inner in space])
    if isinstance(space, spaces.Box):
        if space.dtype.kind == 'f':
            return spaces.Box(-np.inf, np.inf, space.shape, space.dtype)
        return spaces.Box(*_limits(space.dtype), space.shape, space.dtype)
    if isinstance(space, spaces.Discrete):
        return spaces.Discrete(_limits(space.dtype)[1], dtype=space.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        return spaces.MultiDiscrete(
            np.full(space.shape, _limits(space.dtype)[1]), dtype=space.dtype)
    return space


def _limits(dtype):
    """The least and greatest value of an integer or bool dtype."""
    if dtype == np.bool_:
        return 0, 1
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _info_array(key, value, size):
    """The array Gymnasium's vector infos hold a key in, given its first value.

    Last observations ('final_obs') stay objects, so users can index them unbatched.
    """
    if key == 'final_obs':
        return np.full(size, None, object)
    if type(value) in (int, float, bool) or isinstance(value, np.number):
        return np.zeros(size, type(value))
    if isinstance(value, np.ndarray):
        return np.zeros((size, *value.shape), value.dtype)
    return np.full(size, None, object)
