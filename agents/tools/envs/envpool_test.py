"""Tests of the envpool backend against Gymnasium's tasks (see also contract_test.py)."""

import functools
import sys

import gymnasium as gym
import numpy as np
import pytest

from agents.tools import wrappers

envpool = pytest.importorskip('envpool', reason="pip install -e '.[envpool]' to test it.")

from agents.tools.envs import envpool as envpool_backend  # noqa: E402  After the skip.

_TASKS = ['Pendulum-v1', 'CartPole-v1', 'HalfCheetah-v5', 'Hopper-v5']


def _set_state(env, observ):
    """Put a Gymnasium task into the state an envpool observation shows."""
    unwrapped = env.unwrapped
    if env.spec.id == 'Pendulum-v1':
        unwrapped.state = np.array([np.arctan2(observ[1], observ[0]), observ[2]])
    elif env.spec.id == 'CartPole-v1':
        unwrapped.state = np.array(observ, np.float64)
    else:
        # MuJoCo observations leave out the first positions, which these tasks'
        # dynamics and rewards do not depend on.
        model = unwrapped.model
        positions = observ[:len(observ) - model.nv]
        qpos = np.concatenate([np.zeros(model.nq - len(positions)), positions])
        unwrapped.set_state(qpos, observ[len(positions):])


def _actions(space, count, steps, seed=0):
    space.seed(seed)
    return np.stack([np.stack([space.sample() for _ in range(count)]) for _ in range(steps)])


@pytest.mark.parametrize('task', _TASKS)
def test_same_transitions_as_gymnasium_from_the_same_state(task):
    batch = envpool_backend.EnvpoolBatchEnv([functools.partial(gym.make, task)] * 2)
    references = [gym.make(task) for _ in range(2)]
    try:
        assert batch.observation_space == references[0].observation_space
        observ, _ = batch.reset()
        for env, first in zip(references, observ):
            env.reset()
            _set_state(env, first)
        for actions in _actions(batch.action_space, 2, steps=40):
            result = batch.step(actions)
            expected = [env.step(action) for env, action in zip(references, actions)]
            for index, (observ, reward, terminated, truncated, _) in enumerate(expected):
                np.testing.assert_allclose(result[0][index], observ, rtol=1e-5, atol=1e-4)
                assert result[1][index] == pytest.approx(reward, rel=1e-5, abs=1e-4)
                assert (result[2][index], result[3][index]) == (terminated, truncated)
            if np.any(result[2] | result[3]):
                break
    finally:
        batch.close()


@pytest.mark.parametrize('task', ['Pendulum-v1', 'HalfCheetah-v5'])
def test_standard_wrappers_act_on_the_batches_as_on_single_environments(task):
    def wrapped():
        env = wrappers.LimitDuration(gym.make(task), 7)
        return wrappers.ConvertTo32Bit(wrappers.ClipAction(wrappers.RangeNormalize(env)))

    single = wrapped()
    raw = envpool_backend.EnvpoolBatchEnv([functools.partial(gym.make, task)] * 2)
    batch = envpool_backend.EnvpoolBatchEnv([wrapped] * 2)
    try:
        assert batch.observation_space == single.observation_space
        assert batch.action_space == single.action_space
        space = gym.make(task)
        low, high = space.action_space.low, space.action_space.high
        observ_low, observ_high = space.observation_space.low, space.observation_space.high
        finite = np.all(np.isfinite(observ_low))
        # Both pools start with envpool's default seeds, so in the same states.
        raw_observ, _ = raw.reset()
        observ, _ = batch.reset()
        for step, actions in enumerate(_actions(gym.spaces.Box(-2, 2, low.shape), 2, 7), 1):
            unit = np.clip(actions, -1, 1)
            raw_result = raw.step((low + (unit + 1) / 2 * (high - low)).astype(np.float32))
            observ, reward, _, truncated, _ = batch.step(actions)
            expected = raw_result[0]
            if finite:
                expected = 2 * (expected - observ_low) / (observ_high - observ_low) - 1
            np.testing.assert_allclose(observ, expected, rtol=1e-5, atol=1e-5)
            assert observ.dtype == reward.dtype == np.float32
            np.testing.assert_allclose(reward, raw_result[1], rtol=1e-5)
            assert truncated.all() == (step == 7)
    finally:
        raw.close()
        batch.close()


def test_seeds_of_the_constructors_seed_the_pool():
    def seeded(seed):
        env = gym.make('Pendulum-v1')
        env.reset(seed=seed)
        return env

    first = envpool_backend.EnvpoolBatchEnv([functools.partial(seeded, 5)] * 2)
    second = envpool_backend.EnvpoolBatchEnv([functools.partial(seeded, 5)] * 2)
    other = envpool_backend.EnvpoolBatchEnv([functools.partial(seeded, 6)] * 2)
    try:
        observ = first.reset()[0]
        np.testing.assert_array_equal(observ, second.reset()[0])
        assert not np.allclose(observ, other.reset()[0])
        with pytest.raises(ValueError, match='cannot reseed'):
            first.reset(seeds=[1, 2])
    finally:
        for batch in (first, second, other):
            batch.close()


@pytest.mark.parametrize('constructor, message', [
    (functools.partial(gym.make, 'Taxi-v4'), "envpool has no task 'Taxi-v4'"),
    (lambda: wrappers.FrameDelta(gym.make('Pendulum-v1')), 'cannot reproduce the wrapper'),
    (functools.partial(gym.make, 'Pendulum-v1', g=5.0), 'default arguments'),
])
def test_tasks_envpool_cannot_host_name_the_backends_that_can(constructor, message):
    with pytest.raises((ValueError, TypeError), match=message) as caught:
        envpool_backend.EnvpoolBatchEnv([constructor])
    assert 'parallel' in str(caught.value)


def test_missing_envpool_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'envpool', None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[envpool\]'"):
        envpool_backend.EnvpoolBatchEnv([functools.partial(gym.make, 'Pendulum-v1')])
