"""Tests for the deterministic mock environment."""

import gymnasium
from gymnasium.utils import env_checker
import numpy as np
import pytest

from agents.tools.mock_environment import MockEnvironment


def _run_episode(env):
    observ, _ = env.reset()
    observations, rewards = [observ], []
    terminated = False
    while not terminated:
        observ, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert not truncated and info == {}
        observations.append(observ)
        rewards.append(reward)
    return observations, rewards


def test_spaces():
    env = MockEnvironment((2, 3), (4,), 1, 5)
    assert isinstance(env, gymnasium.Env)
    assert env.observation_space == gymnasium.spaces.Box(0.0, np.inf, (2, 3), np.float32)
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (4,), np.float32)


def test_observation_counts_steps_and_reward_is_one():
    env = MockEnvironment((2,), (1,), 4, 4)
    observations, rewards = _run_episode(env)
    assert len(observations) == 5
    for step, observ in enumerate(observations):
        assert observ.dtype == np.float32
        np.testing.assert_array_equal(observ, [step, step])
        assert env.observation_space.contains(observ)
    assert rewards == [1.0] * 4
    assert env.steps == [4] and env.durations == [4]


def test_durations_lie_in_range_and_are_recorded():
    env = MockEnvironment((), (), 2, 6)
    for _ in range(30):
        _run_episode(env)
    assert env.steps == env.durations
    assert set(env.durations) == {2, 3, 4, 5, 6}


def test_deterministic_for_equal_seeds():
    first = MockEnvironment((), (), 1, 100, seed=3)
    second = MockEnvironment((), (), 1, 100, seed=3)
    other = MockEnvironment((), (), 1, 100, seed=4)
    for env in (first, second, other):
        for _ in range(10):
            env.reset()
    assert first.durations == second.durations
    assert first.durations != other.durations


def test_reset_seed_restarts_durations():
    env = MockEnvironment((), (), 1, 100)
    env.reset(seed=7)
    env.reset()
    env.reset(seed=7)
    env.reset()
    assert env.durations[:2] == env.durations[2:]


def test_reset_midway_begins_new_episode():
    env = MockEnvironment((), (), 5, 5)
    env.reset()
    env.step(np.zeros(()))
    observ, _ = env.reset()
    assert observ == 0
    assert env.steps == [1, 0]


def test_step_after_termination_raises():
    env = MockEnvironment((), (), 1, 1)
    env.reset()
    assert env.step(np.zeros(()))[2]
    with pytest.raises(RuntimeError, match='terminated; call reset'):
        env.step(np.zeros(()))


def test_step_before_reset_raises():
    env = MockEnvironment((), (), 1, 1)
    with pytest.raises(RuntimeError, match='reset'):
        env.step(np.zeros(()))


def test_wrong_action_shape_raises():
    env = MockEnvironment((), (3,), 1, 1)
    env.reset()
    with pytest.raises(ValueError, match=r'shape \(3,\)'):
        env.step(np.zeros(2))


def test_actions_outside_bounds_are_accepted():
    env = MockEnvironment((), (2,), 2, 2)
    env.reset()
    assert env.step(np.array([5.0, -5.0]))[1] == 1.0


@pytest.mark.parametrize('durations', [(0, 1), (3, 2)])
def test_invalid_durations(durations):
    with pytest.raises(ValueError, match='min_duration'):
        MockEnvironment((), (), *durations)


def test_render_frames():
    env = MockEnvironment((), (), 3, 3, render_mode='rgb_array')
    env.reset()
    env.step(np.zeros(()))
    frame = env.render()
    assert frame.shape == (16, 16, 3) and frame.dtype == np.uint8
    assert np.all(frame == 1)
    with pytest.raises(ValueError, match='render_mode'):
        MockEnvironment((), (), 1, 1, render_mode='human')
    with pytest.raises(RuntimeError, match='rgb_array'):
        MockEnvironment((), (), 1, 1).render()


@pytest.mark.filterwarnings('ignore:.*maximum value is infinity')
def test_passes_gymnasium_checker():
    env_checker.check_env(MockEnvironment((3,), (2,), 5, 10), skip_render_check=True)
