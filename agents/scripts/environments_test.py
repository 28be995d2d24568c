"""Tests for the environments of configured tasks."""

import gymnasium
import numpy as np
import pytest

from agents.scripts import environments


def _reference_step(env, action, normalize):
    """One step of `env` (from gymnasium.make) through the standard wrappers, written plainly."""
    space = env.action_space
    if isinstance(space, gymnasium.spaces.Box):
        unit = normalize and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
        low, high = (-1.0, 1.0) if unit else (space.low, space.high)
        action = np.clip(action, low, high).astype(np.float32)
        if unit:
            low, high = space.low.astype(np.float64), space.high.astype(np.float64)
            action = (low + (action + 1) / 2 * (high - low)).astype(space.dtype)
    observ, reward, terminated, truncated, _ = env.step(action)
    return _reference_observation(env, observ, normalize), np.float32(reward), terminated, truncated


def _reference_observation(env, observ, normalize):
    """An observation of `env` as the standard wrappers return it, written plainly."""
    space = env.observation_space
    if normalize and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)):
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        observ = (2 * (observ - low) / (high - low) - 1).astype(np.float32)
    return observ.astype(np.float32) if observ.dtype == np.float64 else observ


@pytest.mark.parametrize('task, normalize', [
    ('Pendulum-v1', True), ('Pendulum-v1', False), ('CartPole-v1', True),
    ('CartPole-v1', False), ('HalfCheetah-v5', True)])
def test_standard_wrappers_give_the_bits_of_plain_numpy(task, normalize):
    if task.startswith('HalfCheetah'):
        pytest.importorskip('mujoco')
    env = environments.make_environment(task, 20, normalize, seed=5)
    reference = gymnasium.make(task, max_episode_steps=20)
    assert env.observation_space.dtype == np.float32
    observ, _ = env.reset(seed=7)
    expected = _reference_observation(reference, reference.reset(seed=7)[0], normalize)
    assert observ.dtype == expected.dtype and observ.tobytes() == expected.tobytes()
    rng = np.random.default_rng(3)
    ends = []
    for _ in range(70):
        if isinstance(env.action_space, gymnasium.spaces.Box):
            # Many actions beyond the bounds, which the wrappers clip.
            action = rng.normal(0, 2, env.action_space.shape).astype(np.float32)
        else:
            action = rng.integers(env.action_space.n)
        observ, reward, terminated, truncated, _ = env.step(action)
        expected = _reference_step(reference, action, normalize)
        assert observ.dtype == expected[0].dtype and observ.tobytes() == expected[0].tobytes()
        assert type(reward) is np.float32 and reward.tobytes() == expected[1].tobytes()
        assert (terminated, truncated) == expected[2:]
        if terminated or truncated:
            ends.append((terminated, truncated))
            with pytest.raises(RuntimeError, match='reset'):
                env.step(action)
            seed = int(rng.integers(100))
            observ, _ = env.reset(seed=seed)
            expected = _reference_observation(reference, reference.reset(seed=seed)[0], normalize)
            assert observ.tobytes() == expected.tobytes()
    assert ends  # Episodes ended, by time limit or termination, and were compared.


def test_env_kwargs_change_the_task_and_refuse_a_constructor():
    pytest.importorskip('mujoco')
    env = environments.make_environment(
        'Ant-v5', 20, env_kwargs={'include_cfrc_ext_in_observation': False})
    # Ant-v5 observes 27 positions and velocities, and 78 contact forces by default.
    assert env.observation_space.shape == (27,)
    env.close()
    with pytest.raises(ValueError, match='apply to a Gymnasium id or spec, not to the constructor'):
        environments.make_environment(
            lambda: gymnasium.make('Pendulum-v1'), 20, env_kwargs={'g': 2.0})


class _NoRenderMode(gymnasium.Env):
    """A task whose constructor takes no render_mode, as most of POPGym's."""

    observation_space = gymnasium.spaces.Discrete(3)
    action_space = gymnasium.spaces.Discrete(4, start=-2)

    def __init__(self):
        self.actions = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        self.actions.append(action)
        return 1, 0.0, False, False, {}


class _Broken(_NoRenderMode):
    def __init__(self):
        raise RuntimeError('no simulator here\nsecond line')


gymnasium.register('agents-test/NoRenderMode-v0', entry_point=_NoRenderMode)
gymnasium.register('agents-test/Broken-v0', entry_point=_Broken)


def test_render_mode_is_passed_only_when_asked_and_actions_count_from_zero():
    env = environments.make_environment('agents-test/NoRenderMode-v0', 10)
    assert env.action_space == gymnasium.spaces.Discrete(4)
    env.reset(seed=0)
    env.step(np.int32(0))
    env.step(np.int32(3))
    assert env.unwrapped.actions == [-2, 1]
    with pytest.raises(ValueError) as caught:
        environments.make_environment('agents-test/NoRenderMode-v0', 10, render_mode='rgb_array')
    assert "'agents-test/NoRenderMode-v0'" in str(caught.value)


def test_a_task_that_cannot_be_made_is_one_line_naming_it_and_the_cause():
    for call in (
            lambda: environments.make_environment('agents-test/Broken-v0', 10),
            lambda: environments.check_environment_made('agents-test/Broken-v0', None)):
        with pytest.raises(ValueError) as caught:
            call()
        assert str(caught.value) == (
            "cannot make environment 'agents-test/Broken-v0': RuntimeError: no simulator here")


def test_a_task_whose_spaces_the_graph_cannot_hold_is_refused_before_any_worker():
    gymnasium.register(
        'agents-test/TextActions-v0',
        entry_point=lambda: type('TextActions', (_NoRenderMode,), dict(
            action_space=gymnasium.spaces.Text(4)))())
    with pytest.raises(ValueError, match=r'action space Text\('):
        environments.check_environment_made('agents-test/TextActions-v0', None)
