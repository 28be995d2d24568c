"""Tests for BatchEnv over in-process and external environments."""

import sys

import gymnasium as gym
import numpy as np
import pytest

from agents.tools import batch_env
from agents.tools import wrappers


def _pendulums(count):
    return [gym.make('Pendulum-v1') for _ in range(count)]


def _random_actions(batch_size, steps, seed=0):
    return np.random.RandomState(seed).uniform(-2, 2, (steps, batch_size, 1)).astype(np.float32)


def test_importing_batch_env_does_not_import_tensorflow():
    import subprocess
    code = (
        'import sys\n'
        'from agents.tools import BatchEnv\n'
        'assert "tensorflow" not in sys.modules, "BatchEnv imported TensorFlow"\n')
    subprocess.run([sys.executable, '-c', code], check=True)


def test_step_returns_stacked_arrays_with_types():
    env = batch_env.BatchEnv(_pendulums(3), blocking=True)
    observ, infos = env.reset(seeds=[0, 1, 2])
    assert observ.shape == (3, 3) and len(infos) == 3
    observ, reward, terminated, truncated, infos = env.step(np.zeros((3, 1), np.float32))
    assert observ.shape == (3, 3)
    assert reward.dtype == np.float32 and reward.shape == (3,)
    assert terminated.dtype == bool and truncated.dtype == bool
    assert isinstance(infos, tuple) and len(infos) == 3
    assert len(env) == 3
    assert env[1] is env._envs[1]
    assert env.observation_space.shape == (3,)
    assert env.spec.id == 'Pendulum-v1'  # Forwarded to the first environment.


def test_reset_subset_only_changes_those_environments():
    env = batch_env.BatchEnv(_pendulums(3), blocking=True)
    first, _ = env.reset(seeds=[0, 1, 2])
    again, _ = env.reset(indices=[2], seeds=[2])
    assert again.shape == (1, 3)
    np.testing.assert_allclose(again[0], first[2])


def test_unequal_spaces_are_rejected_with_clear_error():
    envs = [gym.make('Pendulum-v1'), gym.make('CartPole-v1')]
    with pytest.raises(ValueError, match='same observation space'):
        batch_env.BatchEnv(envs, blocking=True)
    with pytest.raises(ValueError, match='at least one'):
        batch_env.BatchEnv([], blocking=True)


def test_wrong_action_batch_is_rejected_with_clear_error():
    env = batch_env.BatchEnv(_pendulums(2), blocking=True)
    env.reset()
    with pytest.raises(ValueError, match='one action per environment'):
        env.step(np.zeros((3, 1)))
    with pytest.raises(ValueError, match=r'shape \(1,\)'):
        env.step(np.zeros((2, 2)))
    with pytest.raises(ValueError, match='out of range|batch has 2'):
        env.reset(indices=[5])


def test_external_processes_match_in_process_stepping():
    import tensorflow  # noqa: F401  Workers must start safely after TensorFlow.
    seeds = [10, 11, 12, 13]
    actions = _random_actions(4, steps=25)
    local = batch_env.BatchEnv(_pendulums(4), blocking=True)
    external = batch_env.BatchEnv(
        [wrappers.ExternalProcess(lambda: gym.make('Pendulum-v1')) for _ in seeds],
        blocking=False)
    try:
        local_observ, _ = local.reset(seeds=seeds)
        external_observ, _ = external.reset(seeds=seeds)
        np.testing.assert_allclose(external_observ, local_observ)
        for action in actions:
            local_transition = local.step(action)
            external_transition = external.step(action)
            for local_part, external_part in zip(local_transition[:4], external_transition[:4]):
                np.testing.assert_allclose(external_part, local_part)
    finally:
        external.close()
    external.close()  # Closing twice is fine.
