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
