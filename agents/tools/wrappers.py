"""Gymnasium wrappers that adapt environments for batched training.

They limit episode length, normalize ranges, clip actions, count integer
actions from zero, convert dtypes to 32 bits, cache spaces, reset
automatically, repeat actions, randomize starts, stack frames, difference
frames, hide parts of the observation, add the previous action to it, and
adapt environments written for the old Gym API. All are `gymnasium.Wrapper`
subclasses (except `GymToGymnasium`, which wraps objects that are not Gymnasium
environments) and can be stacked in any order.

Environment hosting lives in `agents.tools.envs`. `ExternalProcess` and the
errors it raises are also reached from here, where the original BatchPPO kept
it: `agents.tools.wrappers.ExternalProcess` loads it from `agents.tools.envs`
on first access.

This module is pure Python: it does not import TensorFlow.
"""

import copy
import importlib
import math

import gymnasium
import numpy as np

# The original's import path `wrappers.ExternalProcess`, and the errors it
# raises, each mapped to the module of `agents.tools.envs` that defines it.
_HOSTING = {
    'ExternalProcess': 'agents.tools.envs.process',
    'WorkerDiedError': 'agents.tools.envs.errors',
    'WorkerError': 'agents.tools.envs.errors',
}

# The 32-bit dtypes `ConvertTo32Bit` converts 64-bit observations to.
_32_BIT_DTYPES = {
    np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32)}


class LimitDuration(gymnasium.Wrapper):
    """Truncates episodes after a number of steps.

    Stepping before the first reset or after the end of an episode raises, so
    a missing reset is noticed instead of silently continuing a finished
    episode.
    """

    def __init__(self, env, duration):
        """Limit the episodes of an environment.

        Args:
          env: Environment to wrap.
          duration: Number of steps after which `truncated` is set.

        Raises:
          ValueError: If the duration is not a positive integer.
        """
        super().__init__(env)
        self.duration = _check_count(duration, 'duration', minimum=1)
        self._step = None

    def step(self, action):
        if self._step is None:
            raise RuntimeError(
                'LimitDuration: call reset() before step(); the episode has not started '
                'yet or has already ended.')
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        if self._step >= self.duration:
            truncated = True
        if terminated or truncated:
            self._step = None
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        self._step = 0
        return self.env.reset(seed=seed, options=options)


class RangeNormalize(gymnasium.Wrapper):
    """Maps finite Box ranges of observations and actions to [-1, 1].

    The agent sees observations in [-1, 1] and acts in [-1, 1]; actions are
    mapped back to the environment's range before stepping. `action` and
    `observation` also map batches, as the `envpool` backend uses them. The
    ranges, their widths and the action dtype are read once, at construction.
    """

    def __init__(self, env, observ=None, action=None):
        """Normalize the observation and action ranges of an environment.

        Args:
          env: Environment to wrap.
          observ: True to normalize observations, False not to, None to
            normalize them only if the space is a Box with finite bounds.
          action: The same for actions.

        Raises:
          ValueError: If normalization is requested for a space that is not a
            Box with finite bounds and high > low.
        """
        super().__init__(env)
        self._observ_range = _normalizable_range(env.observation_space, observ, 'observ')
        self._action_range = _normalizable_range(env.action_space, action, 'action')
        self._action_dtype = env.action_space.dtype
        if self._observ_range:
            self.observation_space = _unit_box(env.observation_space.shape)
            self._ones = np.ones(env.observation_space.shape)
        if self._action_range:
            self.action_space = _unit_box(env.action_space.shape)

    @property
    def observ_range(self):
        """Float64 arrays `(low, high - low)` of the observations mapped, or None."""
        return self._observ_range

    @property
    def action_range(self):
        """Float64 arrays `(low, high - low)` of the actions mapped, or None."""
        return self._action_range

    def step(self, action):
        observ, reward, terminated, truncated, info = self.env.step(self.action(action))
        return self.observation(observ), reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        return self.observation(observ), info

    def action(self, action):
        """Map an action, or a batch of them, from [-1, 1] to the environment's range."""
        if not self._action_range:
            return action
        low, width = self._action_range
        # `* width` made a new array of at least float64, so adding in place gives `low + mapped`.
        mapped = (np.asarray(action) + 1) / 2 * width
        mapped += low
        return mapped.astype(self._action_dtype, copy=False)

    def observation(self, observ):
        """Map an observation, or a batch of them, from the environment's range to [-1, 1]."""
        if not self._observ_range:
            return observ
        low, width = self._observ_range
        # `2 * (observ - low) / width - 1` in place on the new array of at least float64,
        # with array operands, which cost less than scalars; `x + x` rounds as `2 * x`.
        normalized = observ - low
        normalized += normalized
        normalized /= width
        normalized -= self._ones
        return normalized.astype(np.float32, copy=False)


class ClipAction(gymnasium.Wrapper):
    """Clips actions to the bounds of the Box action space.

    The exposed action space is unbounded, so an agent may send any action,
    for example an unclipped sample of a Gaussian policy. `action` also clips
    batches. The bounds are read once, at construction.
    """

    def __init__(self, env):
        """Clip the actions of an environment.

        Args:
          env: Environment with a floating-point Box action space.

        Raises:
          TypeError: If the action space is not a floating-point Box.
        """
        space = env.action_space
        if not (isinstance(space, gymnasium.spaces.Box)
                and np.issubdtype(space.dtype, np.floating)):
            raise TypeError(f'ClipAction needs a floating-point Box action space, got {space}.')
        super().__init__(env)
        self.action_space = gymnasium.spaces.Box(-np.inf, np.inf, space.shape, space.dtype)
        self._low, self._high, self._dtype = space.low, space.high, space.dtype

    def step(self, action):
        return self.env.step(self.action(action))

    def action(self, action):
        """Clip an action, or a batch of them, to the bounds of the environment."""
        if type(action) is np.ndarray:
            # What np.clip calls for arrays, without its dispatch; the result is a new array.
            return action.clip(self._low, self._high).astype(self._dtype, copy=False)
        return np.clip(action, self._low, self._high).astype(self._dtype)


class ZeroBasedActions(gymnasium.Wrapper):
    """Counts the classes of Discrete and MultiDiscrete actions from zero.

    A Gymnasium space may start its classes anywhere (`Discrete(3, start=-1)`
    takes -1, 0 and 1); a policy's categorical picks indices from zero. The
    exposed action space starts at zero, and `start` is added back before
    stepping. `action` also maps batches.
    """

    def __init__(self, env):
        """Count the actions of an environment from zero.

        Args:
          env: Environment with a Discrete or MultiDiscrete action space.

        Raises:
          TypeError: If the action space is neither Discrete nor MultiDiscrete.
        """
        space = env.action_space
        super().__init__(env)
        if isinstance(space, gymnasium.spaces.Discrete):
            self.action_space = gymnasium.spaces.Discrete(space.n)
        elif isinstance(space, gymnasium.spaces.MultiDiscrete):
            self.action_space = gymnasium.spaces.MultiDiscrete(space.nvec)
        else:
            raise TypeError(
                f'ZeroBasedActions needs a Discrete or MultiDiscrete action space, got {space}.')
        self._start = space.start

    @property
    def start(self):
        """The first class of the environment's action space (an array for MultiDiscrete)."""
        return self._start

    def step(self, action):
        return self.env.step(self.action(action))

    def action(self, action):
        """Map an action, or a batch of them, from indices to the environment's classes."""
        return np.asarray(action) + self._start


class ConvertTo32Bit(gymnasium.Wrapper):
    """Converts 64-bit observations to 32 bits and rewards to float32.

    float64 becomes float32 and int64 becomes int32, in the observations and
    in the observation space, also inside Tuple and Dict observations. A
    non-finite observation or reward raises a ValueError, so that NaNs are
    caught where they appear instead of deep inside training. `observation`
    and `reward` also convert batches.
    """

    def __init__(self, env):
        """Convert the observations and rewards of an environment.

        Args:
          env: Environment to wrap.
        """
        super().__init__(env)
        self.observation_space = _space_to_32_bit(env.observation_space)

    def step(self, action):
        observ, reward, terminated, truncated, info = self.env.step(action)
        return self.observation(observ), self.reward(reward), terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        return self.observation(observ), info

    def observation(self, observ):
        """Convert an observation, or a batch of them, to 32 bits; raise if not finite."""
        return _value_to_32_bit(observ)

    def reward(self, reward):
        """Convert a reward, or a batch of them, to float32; raise if not finite."""
        if isinstance(reward, (float, np.float32)):  # Also np.float64, a float.
            finite = math.isfinite(reward)
        else:
            finite = np.all(np.isfinite(reward))
        if not finite:
            raise ValueError(f'The environment returned a non-finite reward: {reward}.')
        return np.float32(reward)


class CacheSpaces(gymnasium.Wrapper):
    """Reads the observation and action spaces once instead of on every access.

    Useful on top of environments or wrappers that compute their spaces in
    properties.
    """

    def __init__(self, env):
        """Cache the spaces of an environment.

        Args:
          env: Environment to wrap.
        """
        super().__init__(env)
        self.observation_space = env.observation_space
        self.action_space = env.action_space


class AutoReset(gymnasium.Wrapper):
    """Resets the environment on the step after an episode ended.

    That step ignores its action and returns the first observation of the new
    episode with reward 0, not terminated and not truncated, and the reset
    info. Stepping before the first reset also resets.
    """

    def __init__(self, env):
        """Reset an environment automatically.

        Args:
          env: Environment to wrap.
        """
        super().__init__(env)
        self._done = True

    def step(self, action):
        if self._done:
            observ, info = self.env.reset()
            reward, terminated, truncated = 0.0, False, False
        else:
            observ, reward, terminated, truncated, info = self.env.step(action)
        self._done = terminated or truncated
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        self._done = False
        return self.env.reset(seed=seed, options=options)


class ActionRepeat(gymnasium.Wrapper):
    """Repeats each action several times and sums the rewards.

    The repetition stops early when the episode ends.
    """

    def __init__(self, env, amount):
        """Repeat the actions of an environment.

        Args:
          env: Environment to wrap.
          amount: Number of environment steps per step of the wrapper.

        Raises:
          ValueError: If the amount is not a positive integer.
        """
        super().__init__(env)
        self._amount = _check_count(amount, 'amount', minimum=1)

    def step(self, action):
        total_reward = 0.0
        for _ in range(self._amount):
            observ, reward, terminated, truncated, info = self.env.step(action)
            total_reward += reward
            if terminated or truncated:
                break
        return observ, total_reward, terminated, truncated, info


class RandomStart(gymnasium.Wrapper):
    """Takes a random number of random actions after each reset.

    This varies the start states of deterministic environments. If the episode
    ends during these steps, the environment is reset and a new number of
    steps is drawn. A seed passed to `reset` also seeds the number of steps and
    the actions.
    """

    def __init__(self, env, max_steps):
        """Randomize the start states of an environment.

        Args:
          env: Environment to wrap.
          max_steps: Largest number of random steps after a reset; the number is
            drawn uniformly from 0 to max_steps.

        Raises:
          ValueError: If max_steps is not a non-negative integer.
        """
        super().__init__(env)
        self._max_steps = _check_count(max_steps, 'max_steps', minimum=0)
        self._random = np.random.default_rng()
        # A private copy, so seeding it does not affect other users of the space.
        self._action_sampler = copy.deepcopy(env.action_space)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._random = np.random.default_rng(seed)
            self._action_sampler.seed(seed)
        while True:
            observ, info = self.env.reset(seed=seed, options=options)
            seed = None  # Retries continue the seeded random streams.
            steps = self._random.integers(0, self._max_steps, endpoint=True)
            for _ in range(steps):
                action = self._action_sampler.sample()
                observ, _, terminated, truncated, info = self.env.step(action)
                if terminated or truncated:
                    break
            else:
                return observ, info


class FrameHistory(gymnasium.Wrapper):
    """Returns a stack of past observations as the observation.

    Before enough steps have passed, the first observation of the episode fills
    in for the missing past ones.
    """

    def __init__(self, env, past_indices, flatten):
        """Stack past observations of an environment.

        Args:
          env: Environment with a Box observation space.
          past_indices: Non-negative ints, how many steps back each frame of the
            stack is; 0 is the current observation.
          flatten: Concatenate the frames along the first observation axis
            instead of stacking them along a new first axis.

        Raises:
          TypeError: If the observation space is not a Box.
          ValueError: If past_indices is empty or has negative entries.
        """
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f'FrameHistory needs a Box observation space, got {space}.')
        past_indices = [_check_count(index, 'past_indices entry', 0) for index in past_indices]
        if not past_indices:
            raise ValueError('FrameHistory needs at least one past index, got none.')
        super().__init__(env)
        self._past_indices = np.array(past_indices)
        self._capacity = max(past_indices) + 1
        self._flatten = flatten
        self._buffer = None
        self._step = 0
        low = self._stack(np.repeat(space.low[None], len(past_indices), 0))
        high = self._stack(np.repeat(space.high[None], len(past_indices), 0))
        self.observation_space = gymnasium.spaces.Box(low, high, dtype=space.dtype)

    def step(self, action):
        if self._buffer is None:
            raise RuntimeError('FrameHistory: call reset() before step().')
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        self._buffer[self._step % self._capacity] = observ
        return self._select_frames(), reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        self._buffer = np.repeat(np.asarray(observ)[None], self._capacity, 0)
        self._step = 0
        return self._select_frames(), info

    def _select_frames(self):
        slots = (self._step - self._past_indices) % self._capacity
        return self._stack(self._buffer[slots])

    def _stack(self, frames):
        if self._flatten:
            return frames.reshape((-1,) + frames.shape[2:])
        return frames


class FrameDelta(gymnasium.Wrapper):
    """Returns the difference to the previous observation as the observation.

    As in the original BatchPPO, `reset` returns the first observation itself,
    since there is no previous one. Integer observations become floats so that
    differences can be negative. The observation space covers both the
    differences and the first observation.
    """

    def __init__(self, env):
        """Difference consecutive observations of an environment.

        Args:
          env: Environment with a Box observation space.

        Raises:
          TypeError: If the observation space is not a Box.
        """
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f'FrameDelta needs a Box observation space, got {space}.')
        super().__init__(env)
        self._dtype = np.promote_types(space.dtype, np.float32)
        low, high = space.low.astype(self._dtype), space.high.astype(self._dtype)
        self.observation_space = gymnasium.spaces.Box(
            np.minimum(low - high, low), np.maximum(high - low, high), dtype=self._dtype)
        self._last = None

    def step(self, action):
        if self._last is None:
            raise RuntimeError('FrameDelta: call reset() before step().')
        observ, reward, terminated, truncated, info = self.env.step(action)
        observ = np.asarray(observ, self._dtype)
        delta = observ - self._last
        self._last = observ
        return delta, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        self._last = np.asarray(observ, self._dtype)
        return self._last.copy(), info


class MaskObservation(gymnasium.ObservationWrapper):
    """Zeroes chosen entries of every observation, so the agent never sees them.

    Hiding the velocities of a task makes it partially observed: a policy can
    then act well only by remembering earlier observations, as in the NoVel
    tasks of rl-baselines3-zoo (`CartPole-v1` with indices 1 and 3 hidden,
    `Pendulum-v1` with index 2). The observation space is unchanged.
    """

    def __init__(self, env, indices):
        """Hide entries of a Box observation.

        Args:
          env: Environment with a Box observation space.
          indices: Indices into the flattened observation to zero.

        Raises:
          ValueError: If the space is not a Box, an index is out of range, or
            zero lies outside the bounds of a hidden entry.
        """
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box):
            raise ValueError(
                f'observation_mask needs a Box observation space, got {space}.')
        size = math.prod(space.shape)
        indices = np.asarray(sorted(set(indices)), np.int64)
        if indices.size and not (0 <= indices.min() and indices.max() < size):
            raise ValueError(
                f'observation_mask indices must lie in [0, {size}) for the observation space '
                f'{space}; got {indices.tolist()}.')
        low, high = space.low.reshape(-1)[indices], space.high.reshape(-1)[indices]
        if np.any(low > 0) or np.any(high < 0):
            raise ValueError(
                f'observation_mask zeroes entries {indices.tolist()}, but zero lies outside '
                f'their bounds in {space}.')
        self._indices = indices

    def observation(self, observ):
        observ = np.array(observ, copy=True)
        observ.reshape(-1)[self._indices] = 0
        return observ


class PreviousAction(gymnasium.Wrapper):
    """Observes the previous action beside the observation, as POPGym's baselines do.

    The observation becomes a Tuple of the environment's observation and the
    action taken before it. An episode's first observation comes with a null
    action no real action equals: one class past the last for Discrete and
    MultiDiscrete entries, the class 2 of entries that are otherwise 0 or 1
    (a MultiBinary action is observed as a MultiDiscrete of three classes per
    entry), and zeros for Box actions.
    """

    def __init__(self, env):
        """Add the previous action to the observations of an environment.

        Args:
          env: Environment with a Box, Discrete, MultiDiscrete or MultiBinary
            action space.

        Raises:
          TypeError: If the action space is none of these.
        """
        super().__init__(env)
        space = env.action_space
        if isinstance(space, gymnasium.spaces.Discrete):
            observed = gymnasium.spaces.Discrete(space.n + 1, start=space.start)
            self._null = space.start + space.n
        elif isinstance(space, gymnasium.spaces.MultiDiscrete):
            observed = gymnasium.spaces.MultiDiscrete(space.nvec + 1, start=space.start)
            self._null = space.start + space.nvec
        elif isinstance(space, gymnasium.spaces.MultiBinary):
            observed = gymnasium.spaces.MultiDiscrete(np.full(space.shape, 3))
            self._null = np.full(space.shape, 2)
        elif isinstance(space, gymnasium.spaces.Box):
            observed, self._null = space, np.zeros(space.shape, space.dtype)
        else:
            raise TypeError(
                f'PreviousAction needs a Box, Discrete, MultiDiscrete or MultiBinary action '
                f'space, got {space}.')
        self.observation_space = gymnasium.spaces.Tuple((env.observation_space, observed))

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        return (observ, copy.copy(self._null)), info

    def step(self, action):
        observ, reward, terminated, truncated, info = self.env.step(action)
        return (observ, np.asarray(action)), reward, terminated, truncated, info


class GymToGymnasium(gymnasium.Env):
    """Adapts an environment written for the old Gym API to the Gymnasium API.

    The old API returns only the observation from `reset()` and a 4-tuple
    `(observ, reward, done, info)` from `step()`. A `done` with
    `info['TimeLimit.truncated']` becomes `truncated`, any other `done` becomes
    `terminated`. Old Gym spaces are converted to Gymnasium spaces, and other
    public attributes are forwarded to the wrapped environment.
    """

    def __init__(self, env, render_mode=None):
        """Adapt an old Gym environment.

        Args:
          env: Environment with the old Gym API.
          render_mode: Mode passed to the old `env.render(mode=...)`; None calls
            `env.render()` without a mode.

        Raises:
          TypeError: If a space cannot be converted to a Gymnasium space.
        """
        self.env = env
        self.observation_space = _to_gymnasium_space(env.observation_space)
        self.action_space = _to_gymnasium_space(env.action_space)
        self.metadata = getattr(env, 'metadata', {})
        self.render_mode = render_mode

    def __getattr__(self, name):
        if name.startswith('_') or name == 'env':
            raise AttributeError(f'{type(self).__name__} has no attribute {name!r}.')
        return getattr(self.env, name)

    def step(self, action):
        result = self.env.step(action)
        if len(result) != 4:
            raise ValueError(
                f'GymToGymnasium expects the old Gym API, where step() returns '
                f'(observ, reward, done, info), but got {len(result)} values; Gymnasium '
                f'environments need no adapter.')
        observ, reward, done, info = result
        truncated = bool(done) and bool(info.get('TimeLimit.truncated', False))
        terminated = bool(done) and not truncated
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        if options:
            raise ValueError(
                f'The old Gym API reset() takes no options, got {options!r}.')
        if seed is not None:
            if not callable(getattr(self.env, 'seed', None)):
                raise ValueError(
                    f'Cannot seed {self.env!r}: it has no seed() method; reset it '
                    f'without a seed.')
            self.env.seed(seed)
        super().reset(seed=seed)
        return self.env.reset(), {}

    def render(self):
        if self.render_mode is None:
            return self.env.render()
        return self.env.render(mode=self.render_mode)

    def close(self):
        if callable(getattr(self.env, 'close', None)):
            self.env.close()


def _check_count(value, name, minimum):
    """Return the value as an int, or raise if it is not an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f'{name} must be an integer >= {minimum}, got {value!r}.')
    return int(value)


def _normalizable_range(space, request, argument):
    """Return the range to normalize as float64 (low, high - low), or None to leave the space."""
    if request not in (None, True, False):
        raise ValueError(f'{argument} must be True, False or None, got {request!r}.')
    if request is False:
        return None
    if (isinstance(space, gymnasium.spaces.Box) and np.all(np.isfinite(space.low))
            and np.all(np.isfinite(space.high)) and np.all(space.high > space.low)):
        low = space.low.astype(np.float64)
        return low, space.high.astype(np.float64) - low
    if request:
        raise ValueError(
            f'RangeNormalize cannot normalize the {argument} space {space}: it needs a Box '
            f'with finite bounds and high > low. Pass {argument}=None to normalize only '
            f'finite ranges, or {argument}=False.')
    return None


def _unit_box(shape):
    return gymnasium.spaces.Box(-1.0, 1.0, shape, np.float32)


def _space_to_32_bit(space):
    """Return the space with float64 and int64 replaced by their 32-bit types."""
    spaces = gymnasium.spaces
    if isinstance(space, spaces.Box) and space.dtype == np.float64:
        return spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32),
                          dtype=np.float32)
    if isinstance(space, spaces.Box) and space.dtype == np.int64:
        limits = np.iinfo(np.int32)
        low = np.clip(space.low, limits.min, limits.max).astype(np.int32)
        high = np.clip(space.high, limits.min, limits.max).astype(np.int32)
        return spaces.Box(low, high, dtype=np.int32)
    if isinstance(space, spaces.Discrete) and space.dtype == np.int64:
        return spaces.Discrete(int(space.n), start=int(space.start), dtype=np.int32)
    if isinstance(space, spaces.MultiDiscrete) and space.dtype == np.int64:
        return spaces.MultiDiscrete(space.nvec, dtype=np.int32, start=space.start)
    if isinstance(space, spaces.Tuple):
        return spaces.Tuple([_space_to_32_bit(inner) for inner in space.spaces])
    if isinstance(space, spaces.Dict):
        # Pairs, not a dict, which Dict would sort: the space keeps its key order.
        return spaces.Dict([(key, _space_to_32_bit(inner)) for key, inner in space.spaces.items()])
    return space


def _value_to_32_bit(value):
    """Convert float64 and int64 arrays in a possibly nested observation."""
    if isinstance(value, tuple):
        return tuple(_value_to_32_bit(inner) for inner in value)
    if isinstance(value, dict):
        return {key: _value_to_32_bit(inner) for key, inner in value.items()}
    array = np.asarray(value)
    if array.dtype.kind == 'f' and not _all_finite(array):
        raise ValueError(f'The environment returned a non-finite observation: {array}.')
    dtype = _32_BIT_DTYPES.get(array.dtype)
    if dtype is not None:
        array = array.astype(dtype)
    return array[()] if array.ndim == 0 else array


def _all_finite(array):
    """Whether no entry of a floating-point array is infinite or NaN.

    The sum of the squares is finite exactly when every entry is, unless it
    overflows; only then are the entries checked one by one. On observations
    of a few numbers this is about twice as fast as `np.isfinite(...).all()`.
    """
    return math.isfinite(np.vdot(array, array)) or bool(np.isfinite(array).all())


def _to_gymnasium_space(space):
    """Convert an old Gym space, recognized by its class name, to Gymnasium."""
    spaces = gymnasium.spaces
    if isinstance(space, spaces.Space):
        return space
    kind = type(space).__name__
    if kind == 'Box':
        return spaces.Box(np.asarray(space.low), np.asarray(space.high), dtype=space.dtype)
    if kind == 'Discrete':
        return spaces.Discrete(int(space.n), start=int(getattr(space, 'start', 0)))
    if kind == 'MultiDiscrete':
        return spaces.MultiDiscrete(np.asarray(space.nvec))
    if kind == 'MultiBinary':
        return spaces.MultiBinary(space.n)
    if kind == 'Tuple':
        return spaces.Tuple([_to_gymnasium_space(inner) for inner in space.spaces])
    if kind == 'Dict':
        return spaces.Dict(
            [(key, _to_gymnasium_space(inner)) for key, inner in space.spaces.items()])
    raise TypeError(f'GymToGymnasium cannot convert the space {space!r} to a Gymnasium space.')


def __getattr__(name):
    """Load `ExternalProcess` and its errors from `agents.tools.envs` on first access."""
    if name not in _HOSTING:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(_HOSTING[name]), name)
