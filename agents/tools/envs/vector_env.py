"""`VectorEnv`: any backend of the batch contract as a Gymnasium vector environment."""

import numbers

import gymnasium
from gymnasium.vector import AutoresetMode
from gymnasium.vector import utils as vector_utils
import numpy as np

from agents.tools.envs import access
from agents.tools.envs import backends
from agents.tools.envs import batching


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
    environments where they run, through their wrappers. (The `parallel`
    backend resets an environment as soon as its episode ends, so a method
    called in between sees it reset a step earlier than SyncVectorEnv's.)

    Errors are the backend's (see `contract.BaseBatchEnv`): an exception in an
    environment, a worker that dies or does not answer in time raise
    `WorkerError`, `WorkerDiedError` or `WorkerTimeoutError`; after the last
    two the backend has closed itself and `closed` is True.
    """

    def __init__(
            self, env_fns, backend='parallel', autoreset_mode=AutoresetMode.NEXT_STEP,
            **options):
        """Build the environments on the backend.

        Args:
          env_fns: Zero-argument callables, one per environment, each returning
            a Gymnasium environment; all with the same spaces.
          backend: Name of the backend, a key of `envs.BACKENDS`.
          autoreset_mode: An `AutoresetMode` or its value ('NextStep',
            'SameStep', 'Disabled').
          **options: Options of the backend, such as `num_workers` or
            `timeout`.

        Raises:
          ValueError: If the backend or autoreset mode is unknown, there are no
            constructors or their spaces differ.
        """
        self._closed = False
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise ValueError(
                f'Unknown autoreset_mode {autoreset_mode!r}; choose one of '
                f'{", ".join(mode.value for mode in AutoresetMode)}.') from None
        if backend == 'parallel' and self.autoreset_mode is AutoresetMode.DISABLED:
            # Resets come with options (what remains of the reset_mask's), which
            # would reset an environment the backend had reset ahead a second time.
            options.setdefault('auto_reset', False)
        self._batch = backends.make_batch_env(backend, env_fns, **options)
        self._batch.reward_dtype = np.float64
        self.backend = backend
        self.num_envs = len(self._batch)
        self.metadata = dict(getattr(self._batch, 'metadata', {}))
        self.metadata['autoreset_mode'] = self.autoreset_mode
        self.render_mode = getattr(self._batch, 'render_mode', None)
        self.single_observation_space = self._batch.observation_space
        self.single_action_space = self._batch.action_space
        self.observation_space = vector_utils.batch_space(
            self.single_observation_space, self.num_envs)
        self.action_space = vector_utils.batch_space(self.single_action_space, self.num_envs)
        self._observ_layout = batching.BatchLayout(self.single_observation_space, 'observation')
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
        return observ, self._vector_info(zip(indices, infos))

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
        if self.autoreset_mode is AutoresetMode.SAME_STEP and ended.any():
            info = self._reset_in_same_step(observ, infos, np.flatnonzero(ended))
        else:
            info = self._vector_info(enumerate(infos))
        self._ended = ended
        self._observ = observ
        return observ, reward, terminated, truncated, info

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

    def close_extras(self, **kwargs):
        """Close the backend: its environments, processes and shared memory."""
        del kwargs
        self._batch.close()

    def _step_and_reset_ended(self, actions):
        """Reset the environments whose episode ended and step the others (NEXT_STEP)."""
        observ, reward, terminated, truncated, infos = self._batch.step_or_reset(
            actions, self._ended)
        self._ended = terminated | truncated
        self._observ = observ
        return observ, reward, terminated, truncated, self._vector_info(enumerate(infos))

    def _reset_in_same_step(self, observ, infos, ended):
        """Reset the environments that ended in place of their last observation (SAME_STEP).

        Returns:
          The infos, with the last observations and infos of the ended
          environments under 'final_obs' and 'final_info'.
        """
        final_observ = {index: self._observ_layout.row(observ, index) for index in ended}
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
