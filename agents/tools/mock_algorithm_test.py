"""Tests for the random-acting mock algorithm."""

import types

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from agents.tools.mock_algorithm import MockAlgorithm
from agents.tools.mock_environment import MockEnvironment


def _env_with_actions(space):
    return types.SimpleNamespace(action_space=space)


def _perform(algorithm, batch_size, observ_shape=(2,)):
    indices = tf.compat.v1.placeholder(tf.int32, [None])
    observ = tf.zeros([batch_size, *observ_shape])
    action, summary = algorithm.perform(indices, observ)
    with tf.compat.v1.Session() as sess:
        return sess.run((action, summary), {indices: np.arange(batch_size)})


def test_box_actions_have_batch_shape_and_lie_in_bounds():
    envs = [MockEnvironment((2,), (3, 2), 1, 5) for _ in range(4)]
    with tf.Graph().as_default():
        action, summary = _perform(MockAlgorithm(envs), batch_size=50)
    assert action.shape == (50, 3, 2) and action.dtype == np.float32
    assert np.all(action >= -1) and np.all(action <= 1)
    assert action.std() > 0.3  # Spread over the range, not constant.
    assert summary == b''


def test_box_with_infinite_bounds_uses_unit_range_there():
    low = np.array([2.0, -np.inf], np.float32)
    high = np.array([3.0, np.inf], np.float32)
    space = gymnasium.spaces.Box(low, high, dtype=np.float32)
    with tf.Graph().as_default():
        action, _ = _perform(MockAlgorithm([_env_with_actions(space)]), batch_size=100)
    assert np.all((action[:, 0] >= 2) & (action[:, 0] <= 3))
    assert np.all(np.abs(action[:, 1]) <= 1)


def test_discrete_actions():
    space = gymnasium.spaces.Discrete(3, start=2)
    with tf.Graph().as_default():
        action, _ = _perform(MockAlgorithm([_env_with_actions(space)]), batch_size=200)
    assert action.shape == (200,) and action.dtype == np.int32
    assert set(action.tolist()) == {2, 3, 4}


def test_other_methods_return_empty_summaries():
    algorithm = MockAlgorithm([MockEnvironment((2,), (1,), 1, 5)])
    with tf.Graph().as_default():
        indices = tf.range(3)
        observ = tf.zeros([3, 2])
        summaries = [
            algorithm.begin_episode(indices),
            algorithm.experience(indices, observ, tf.zeros([3, 1]), tf.zeros([3]),
                                 tf.zeros([3], tf.bool), observ),
            algorithm.end_episode(indices),
        ]
        with tf.compat.v1.Session() as sess:
            assert sess.run(summaries) == [b'', b'', b'']


def test_unsupported_action_space():
    space = gymnasium.spaces.MultiBinary(3)
    with pytest.raises(TypeError, match='Box and Discrete'):
        MockAlgorithm([_env_with_actions(space)])
