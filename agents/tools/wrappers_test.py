"""Tests for the environment wrappers."""

import gymnasium
import numpy as np
import pytest

from agents.tools import wrappers
from agents.tools.envs import testing


def _counting_env(**kwargs):
    """A `testing.CountingEnv` with ten steps per episode and a Box action space."""
    kwargs.setdefault('length', 10)
    kwargs.setdefault('action_space', gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32))
    return testing.CountingEnv(**kwargs)


class _OldGymSpaces:
    """Stand-ins for spaces of the old Gym package, which GymToGymnasium converts."""

    class Box:

        def __init__(self, low, high, shape):
            self.low = np.full(shape, low, np.float32)
            self.high = np.full(shape, high, np.float32)
            self.shape = shape
            self.dtype = np.dtype(np.float32)


class _OldApiEnv:
    """Environment with the old Gym API: bare reset and a 4-tuple step."""

    def __init__(self, length, time_limit):
        self.observation_space = _OldGymSpaces.Box(-1.0, 1.0, (3,))
        self.action_space = _OldGymSpaces.Box(-2.0, 2.0, (1,))
        self.length = length
        self.time_limit = time_limit
        self.seeds = []
        self.count = 0

    def seed(self, seed):
        self.seeds.append(seed)

    def reset(self):
        self.count = 0
        return np.zeros(3, np.float32)

    def step(self, action):
        self.count += 1
        done = self.count >= self.length
        info = {'TimeLimit.truncated': True} if done and self.time_limit else {}
        return np.full(3, self.count, np.float32), 1.0, done, info


def test_limit_duration_truncates_and_requires_reset():
    env = wrappers.LimitDuration(_counting_env(length=10), duration=3)
    with pytest.raises(RuntimeError, match='reset'):
        env.step([0.0])
    env.reset()
    flags = [env.step([0.0])[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    with pytest.raises(RuntimeError, match='reset'):
        env.step([0.0])
    env.reset()
    assert env.step([0.0])[0][0] == 1
    short = wrappers.LimitDuration(_counting_env(length=1), duration=3)
    short.reset()
    assert short.step([0.0])[2:4] == (True, False)
    with pytest.raises(ValueError, match='duration'):
        wrappers.LimitDuration(_counting_env(), duration=0)


def test_range_normalize_maps_finite_ranges_to_unit_interval():
    observation_space = gymnasium.spaces.Box(0.0, 10.0, (2,), np.float64)
    action_space = gymnasium.spaces.Box(0.0, 4.0, (1,), np.float32)
    inner = _counting_env(observation_space=observation_space, action_space=action_space)
    env = wrappers.RangeNormalize(inner)
    assert env.observation_space == gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    observ, _ = env.reset()
    np.testing.assert_allclose(observ, [-1, -1])
    for action in ([-1.0], [0.0], [1.0], [0.0], [0.0]):
        observ = env.step(np.array(action, np.float32))[0]
    np.testing.assert_allclose(observ, [0, 0])
    assert observ.dtype == np.float32
    np.testing.assert_allclose(inner.actions[:3], [[0.0], [2.0], [4.0]])
    assert inner.actions[0].dtype == np.float32


def test_range_normalize_leaves_or_rejects_infinite_ranges():
    inner = _counting_env()
    env = wrappers.RangeNormalize(inner)
    assert env.observation_space == inner.observation_space
    env.reset()
    np.testing.assert_array_equal(env.step([0.5])[0], [1, 1])
    np.testing.assert_allclose(inner.actions[0], [0.5])
    unchanged = wrappers.RangeNormalize(inner, action=False)
    assert unchanged.action_space == inner.action_space
    with pytest.raises(ValueError, match='finite'):
        wrappers.RangeNormalize(inner, observ=True)


def test_clip_action_clips_to_bounds_and_exposes_unbounded_space():
    inner = _counting_env()
    env = wrappers.ClipAction(inner)
    assert np.all(np.isinf(env.action_space.low)) and np.all(np.isinf(env.action_space.high))
    env.reset()
    env.step(np.array([5.0]))
    env.step(np.array([-0.5]))
    np.testing.assert_allclose(inner.actions, [[1.0], [-0.5]])
    assert inner.actions[0].dtype == np.float32
    with pytest.raises(TypeError, match='Box'):
        wrappers.ClipAction(_counting_env(action_space=gymnasium.spaces.Discrete(3)))


def test_convert_to_32_bit_converts_observations_spaces_and_rewards():
    env = wrappers.ConvertTo32Bit(_counting_env())
    assert env.observation_space.dtype == np.float32
    observ, _ = env.reset()
    assert observ.dtype == np.float32
    observ, reward, _, _, _ = env.step([0.0])
    assert observ.dtype == np.float32 and env.observation_space.contains(observ)
    assert isinstance(reward, np.float32) and reward == 1
    integers = wrappers.ConvertTo32Bit(_counting_env(
        observation_space=gymnasium.spaces.Box(0, 100, (2,), np.int64)))
    assert integers.observation_space.dtype == np.int32
    assert integers.reset()[0].dtype == np.int32
    discrete = wrappers.ConvertTo32Bit(_counting_env(
        observation_space=gymnasium.spaces.Discrete(20)))
    assert discrete.observation_space.dtype == np.int32
    observ = discrete.reset()[0]
    assert observ.dtype == np.int32 and discrete.observation_space.contains(observ)


def test_convert_to_32_bit_keeps_the_key_order_of_dict_spaces():
    env = wrappers.ConvertTo32Bit(testing.KeyedEnv())
    keys = ['observation', 'desired_goal', 'achieved_goal']
    assert list(env.observation_space.spaces) == keys
    assert env.observation_space['observation'].dtype == np.float32
    observ, _ = env.reset(seed=0)
    assert list(observ) == keys and env.observation_space.contains(observ)


def test_convert_to_32_bit_rejects_non_finite_observations():
    inner = _counting_env()
    env = wrappers.ConvertTo32Bit(inner)
    env.reset()
    inner.count = np.nan
    with pytest.raises(ValueError, match='non-finite'):
        env.step([0.0])


def test_cache_spaces_reads_spaces_once():
    class CountingSpaceEnv(testing.CountingEnv):
        reads = 0

        @property
        def observation_space(self):
            CountingSpaceEnv.reads += 1
            return gymnasium.spaces.Box(-1.0, 1.0, (2,))

        @observation_space.setter
        def observation_space(self, value):
            pass

    env = wrappers.CacheSpaces(CountingSpaceEnv(
        action_space=gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)))
    reads = CountingSpaceEnv.reads
    for _ in range(3):
        assert env.observation_space == gymnasium.spaces.Box(-1.0, 1.0, (2,))
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    assert CountingSpaceEnv.reads == reads


def test_auto_reset_resets_on_step_after_episode_end():
    inner = _counting_env(length=2)
    env = wrappers.AutoReset(inner)
    observ, reward, terminated, truncated, info = env.step([0.0])
    assert (observ[0], reward, terminated, truncated, info) == (0, 0.0, False, False,
                                                                {'options': None})
    assert env.step([0.0])[2] is False
    assert env.step([0.0])[2] is True
    observ, reward, terminated, _, info = env.step([0.0])
    assert (observ[0], reward, terminated, info) == (0, 0.0, False, {'options': None})
    assert inner.resets == 2 and len(inner.actions) == 2


def test_action_repeat_sums_rewards_and_stops_at_episode_end():
    inner = _counting_env(length=4)
    env = wrappers.ActionRepeat(inner, 3)
    env.reset()
    observ, reward, terminated, _, _ = env.step([0.0])
    assert (observ[0], reward, terminated) == (3, 1 + 2 + 3, False)
    observ, reward, terminated, _, _ = env.step([0.0])
    assert (observ[0], reward, terminated) == (4, 4, True)
    with pytest.raises(ValueError, match='amount'):
        wrappers.ActionRepeat(inner, 0)


def test_random_start_takes_seeded_random_steps_without_ending_episode():
    env = wrappers.RandomStart(_counting_env(length=100), max_steps=20)
    starts = [env.reset(seed=seed)[0][0] for seed in range(10)]
    assert all(0 <= start <= 20 for start in starts) and len(set(starts)) > 1
    assert [env.reset(seed=seed)[0][0] for seed in range(10)] == starts
    short = wrappers.RandomStart(_counting_env(length=2), max_steps=20)
    assert all(short.reset()[0][0] < 2 for _ in range(10))
    none = wrappers.RandomStart(_counting_env(), max_steps=0)
    assert none.reset()[0][0] == 0


def test_frame_history_stacks_past_observations():
    env = wrappers.FrameHistory(_counting_env(), past_indices=[0, 2], flatten=False)
    assert env.observation_space.shape == (2, 2)
    observ, _ = env.reset()
    np.testing.assert_array_equal(observ, [[0, 0], [0, 0]])
    np.testing.assert_array_equal(env.step([0.0])[0], [[1, 1], [0, 0]])
    env.step([0.0])
    observ = env.step([0.0])[0]
    np.testing.assert_array_equal(observ, [[3, 3], [1, 1]])
    assert env.observation_space.contains(observ)
    flat = wrappers.FrameHistory(_counting_env(), past_indices=[0, 1], flatten=True)
    assert flat.observation_space.shape == (4,)
    flat.reset()
    np.testing.assert_array_equal(flat.step([0.0])[0], [1, 1, 0, 0])
    with pytest.raises(ValueError, match='past_indices'):
        wrappers.FrameHistory(_counting_env(), past_indices=[-1], flatten=False)


def test_frame_delta_returns_differences_of_observations():
    space = gymnasium.spaces.Box(0, 255, (2,), np.uint8)
    env = wrappers.FrameDelta(_counting_env(observation_space=space))
    assert env.observation_space == gymnasium.spaces.Box(-255, 255, (2,), np.float32)
    observ, _ = env.reset()
    np.testing.assert_array_equal(observ, [0, 0])
    observ = env.step([0.0])[0]
    np.testing.assert_array_equal(observ, [1, 1])
    assert observ.dtype == np.float32 and env.observation_space.contains(observ)


def test_gym_to_gymnasium_adapts_old_api():
    inner = _OldApiEnv(length=2, time_limit=True)
    env = wrappers.GymToGymnasium(inner)
    assert env.observation_space == gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)
    assert env.action_space == gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)
    observ, info = env.reset(seed=7)
    assert inner.seeds == [7] and info == {}
    np.testing.assert_array_equal(observ, [0, 0, 0])
    assert env.step([0.0])[2:4] == (False, False)
    observ, reward, terminated, truncated, _ = env.step([0.0])
    assert (observ[0], reward, terminated, truncated) == (2, 1.0, False, True)
    assert env.length == 2
    terminal = wrappers.GymToGymnasium(_OldApiEnv(length=1, time_limit=False))
    terminal.reset()
    assert terminal.step([0.0])[2:4] == (True, False)
    # Adapted environments work with the other wrappers.
    normalized = wrappers.RangeNormalize(wrappers.GymToGymnasium(_OldApiEnv(5, False)))
    np.testing.assert_allclose(normalized.reset()[0], [0, 0, 0])


def test_gym_to_gymnasium_rejects_new_api_env():
    env = wrappers.GymToGymnasium(_counting_env())
    env.reset()
    with pytest.raises(ValueError, match='old Gym API'):
        env.step([0.0])


def _assert_same_bits(value, expected):
    """Assert equal types, dtypes, shapes and bytes, so -0.0 differs from 0.0 and NaNs match."""
    assert type(value) is type(expected)
    value, expected = np.asarray(value), np.asarray(expected)
    assert (value.dtype, value.shape) == (expected.dtype, expected.shape)
    assert value.tobytes() == expected.tobytes()


def _random_values(rng, shape, dtype, scale):
    """Random values of a dtype, many beyond +-scale, with signed zeros and bounds mixed in."""
    values = rng.normal(0, 2 * scale, shape)
    values.flat[::5] = rng.choice([-0.0, 0.0, -scale, scale, 1e-320], values.flat[::5].shape)
    return values.astype(dtype)


_SPACES = [
    gymnasium.spaces.Box(-2.0, 2.0, (3,), np.float32),
    gymnasium.spaces.Box(np.array([-1.0, 0.0, 0.5]), np.array([1.0, 1e-3, 1e6]), dtype=np.float64),
    gymnasium.spaces.Box(-5, 7, (3,), np.int64),
    gymnasium.spaces.Box(np.float32(1 / 3), np.float32(0.7), (3,), np.float32),
]


@pytest.mark.parametrize('space', _SPACES, ids=str)
@pytest.mark.parametrize('dtype', [np.float32, np.float64, np.int64])
@pytest.mark.parametrize('batch', [(), (1,), (5,)], ids=['single', 'batch1', 'batch5'])
def test_range_normalize_gives_the_bits_of_numpy_reference(space, dtype, batch):
    env = wrappers.RangeNormalize(
        _counting_env(observation_space=space, action_space=space.__class__(
            space.low, space.high, dtype=space.dtype if space.dtype != np.int64 else np.float32)))
    rng = np.random.default_rng(0)
    low, high = space.low.astype(np.float64), space.high.astype(np.float64)
    action_space = env.env.action_space
    action_low, action_high = (action_space.low.astype(np.float64),
                               action_space.high.astype(np.float64))
    for _ in range(20):
        observ = _random_values(rng, batch + space.shape, dtype, 10.0)
        _assert_same_bits(env.observation(observ),
                          (2 * (observ - low) / (high - low) - 1).astype(np.float32))
        action = _random_values(rng, batch + space.shape, dtype, 1.0)
        expected = action_low + (action + 1) / 2 * (action_high - action_low)
        _assert_same_bits(env.action(action), expected.astype(action_space.dtype))
    listed = [0.5, -3.0, 1.0]
    expected = action_low + (np.asarray(listed) + 1) / 2 * (action_high - action_low)
    _assert_same_bits(env.action(listed), expected.astype(action_space.dtype))


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('batch', [(), (1,), (5,)], ids=['single', 'batch1', 'batch5'])
def test_clip_action_gives_the_bits_of_numpy_clip(dtype, batch):
    space = gymnasium.spaces.Box(
        np.array([-1.0, 0.0, -0.0], dtype), np.array([1.0, 2.0, 0.0], dtype), dtype=dtype)
    inner = _counting_env(action_space=space)
    env = wrappers.ClipAction(inner)
    rng = np.random.default_rng(1)
    for action_dtype in (np.float32, np.float64):
        for _ in range(20):
            action = _random_values(rng, batch + (3,), action_dtype, 1.0)
            action.flat[::7] = np.nan
            clipped = env.action(action)
            _assert_same_bits(clipped, np.clip(action, space.low, space.high).astype(dtype))
            assert not np.shares_memory(clipped, action)
    _assert_same_bits(env.action([5.0, -1.0, -0.0]),
                      np.clip([5.0, -1.0, -0.0], space.low, space.high).astype(dtype))
    env.reset()
    action = np.array([3.0, -3.0, 0.5], dtype)
    env.step(action)
    _assert_same_bits(inner.actions[-1], np.array([1.0, 0.0, 0.0], dtype))
    np.testing.assert_array_equal(action, [3.0, -3.0, 0.5])  # The agent's action is kept.


def _reference_32_bit(value):
    """The conversion of `ConvertTo32Bit.observation`, written plainly."""
    array = np.asarray(value)
    if np.issubdtype(array.dtype, np.floating) and not np.all(np.isfinite(array)):
        raise ValueError('non-finite')
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64:
        array = array.astype(np.int32)
    return array[()] if array.ndim == 0 else array


@pytest.mark.parametrize(
    'dtype', [np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize('shape', [(), (1,), (3,), (5, 4)])
def test_convert_to_32_bit_gives_the_bits_of_numpy_reference(dtype, shape):
    env = wrappers.ConvertTo32Bit(_counting_env())
    rng = np.random.default_rng(2)
    for _ in range(10):
        observ = _random_values(rng, shape, np.float64, 100.0).astype(dtype)
        _assert_same_bits(env.observation(observ), _reference_32_bit(observ))
        _assert_same_bits(env.observation(observ[()]), _reference_32_bit(observ[()]))
    nested = env.observation((np.zeros(shape, dtype), {'a': np.ones(shape, dtype), 'b': 3}))
    _assert_same_bits(nested[0], _reference_32_bit(np.zeros(shape, dtype)))
    _assert_same_bits(nested[1]['a'], _reference_32_bit(np.ones(shape, dtype)))
    _assert_same_bits(nested[1]['b'], np.int32(3))


@pytest.mark.parametrize('reward', [
    1.0, -0.0, 1e300, np.float64(-2.5), np.float32(0.1), np.float16(3.0), 7, np.int64(-3),
    True, np.array(1.5), np.array([1.0, 2.0]), np.array([3, 4], np.int64),
    np.array([0.5, -1.0], np.float32)], ids=repr)
def test_convert_to_32_bit_converts_rewards_as_numpy_does(reward):
    env = wrappers.ConvertTo32Bit(_counting_env())
    with np.errstate(over='ignore'):
        _assert_same_bits(env.reward(reward), np.float32(reward))


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize('dtype', [float, np.float64, np.float32, np.float16])
def test_convert_to_32_bit_rejects_non_finite_rewards_and_observations(bad, dtype):
    env = wrappers.ConvertTo32Bit(_counting_env())
    rewards = [dtype(bad), np.array(bad, dtype), np.array([1.0, bad], dtype)]
    for reward in rewards:
        with pytest.raises(ValueError, match='non-finite reward'):
            env.reward(reward)
    observ_dtype = np.float64 if dtype is float else dtype
    for observ in (np.array([1.0, bad, 2.0], observ_dtype), np.array(bad, observ_dtype),
                   np.full((3, 2), bad, observ_dtype), (np.zeros(2), np.array([bad]))):
        with pytest.raises(ValueError, match='non-finite observation'):
            env.observation(observ)
    # Finite values whose squares overflow are finite observations.
    large = np.array([np.finfo(observ_dtype).max, -np.finfo(observ_dtype).max, 1.0], observ_dtype)
    with np.errstate(over='ignore'):  # float64's largest values are infinite in float32.
        _assert_same_bits(env.observation(large), _reference_32_bit(large))


def test_mask_observation_zeroes_the_chosen_entries_at_reset_and_step():
    env = wrappers.MaskObservation(gymnasium.make('CartPole-v1'), (3, 1))
    assert env.observation_space == env.env.observation_space
    observ, _ = env.reset(seed=0)
    unmasked = env.env.unwrapped.state
    np.testing.assert_array_equal(observ[[1, 3]], [0, 0])
    np.testing.assert_allclose(observ[[0, 2]], np.asarray(unmasked)[[0, 2]], rtol=1e-6)
    for _ in range(5):
        observ, *_ = env.step(env.action_space.sample())
        np.testing.assert_array_equal(observ[[1, 3]], [0, 0])
        assert observ[0] != 0 or observ[2] != 0


@pytest.mark.parametrize('space, indices, message', [
    (gymnasium.spaces.Discrete(3), (0,), 'needs a Box'),
    (gymnasium.spaces.Box(-1, 1, (2, 2), np.float32), (4,), r'lie in \[0, 4\)'),
    (gymnasium.spaces.Box(1, 2, (2,), np.float32), (1,), 'zero lies outside'),
])
def test_mask_observation_refuses_what_it_cannot_hide(space, indices, message):
    env = gymnasium.make('CartPole-v1')
    env.observation_space = space
    with pytest.raises(ValueError, match=message):
        wrappers.MaskObservation(env, indices)


def test_the_original_path_of_external_process_and_its_errors_still_works():
    from agents.tools.envs import errors
    from agents.tools.envs import process
    from agents.tools.wrappers import ExternalProcess
    assert ExternalProcess is wrappers.ExternalProcess is process.ExternalProcess
    assert wrappers.WorkerError is errors.WorkerError
    assert wrappers.WorkerDiedError is errors.WorkerDiedError
    with pytest.raises(AttributeError, match="has no attribute 'RemoteEnvironment'"):
        wrappers.RemoteEnvironment  # Hosting lives in agents.tools.envs.


@pytest.mark.parametrize('space, null', [
    (gymnasium.spaces.Discrete(3, start=1), 4),
    (gymnasium.spaces.MultiDiscrete([2, 3]), [2, 3]),
    (gymnasium.spaces.MultiBinary(2), [2, 2]),
    (gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32), [0.0, 0.0])])
def test_previous_action_comes_beside_the_observation_with_a_null_one_first(space, null):
    env = wrappers.PreviousAction(
        testing.SampleEnv(gymnasium.spaces.Discrete(5), 4, False, space))
    (observ, previous), _ = env.reset(seed=0)
    np.testing.assert_array_equal(previous, null)
    assert env.observation_space.contains((observ, previous))
    space.seed(0)
    action = space.sample()
    (observ, previous), *_ = env.step(action)
    np.testing.assert_array_equal(previous, action)
    observed = np.asarray(previous, env.observation_space[1].dtype)
    assert env.observation_space.contains((observ, observed))


def test_zero_based_actions_add_the_start_back_for_the_environment():
    action_space = gymnasium.spaces.MultiDiscrete([2, 3], start=[1, -1])
    env = wrappers.ZeroBasedActions(
        testing.SampleEnv(gymnasium.spaces.Discrete(2), 4, False, action_space))
    assert env.action_space == gymnasium.spaces.MultiDiscrete([2, 3])
    env.reset(seed=0)
    info = env.step(np.array([1, 0]))[4]
    assert info['action'].tolist() == [2, -1]
    with pytest.raises(TypeError, match='Discrete or MultiDiscrete'):
        wrappers.ZeroBasedActions(gymnasium.make('Pendulum-v1'))
