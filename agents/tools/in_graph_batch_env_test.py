"""Tests for stepping batches of environments inside the graph."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from agents.tools import in_graph_batch_env
from agents.tools import in_graph_env
from agents.tools.envs import batch_env


def _batch(name, count):
    envs = [gym.make(name) for _ in range(count)]
    for index, env in enumerate(envs):
        env.reset(seed=index)
    return batch_env.BatchEnv(envs, blocking=True)


def _run_step(env, action):
    """Build an op that steps and then reads the state variables."""
    with tf.control_dependencies([env.simulate(action)]):
        return [tf.identity(variable.read_value()) for variable in (
            env.observ, env.action, env.reward, env.done, env.terminated)]


def test_variables_have_parsed_shapes_and_dtypes_and_are_not_trainable():
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(_batch('CartPole-v1', 3))
        assert env.observ.shape == (3, 4) and env.observ.dtype == tf.float32
        assert env.action.shape == (3,) and env.action.dtype == tf.int32
        assert env.reward.dtype == tf.float32 and env.done.dtype == tf.bool
        assert env.terminated.shape == (3,)
        assert not tf.compat.v1.trainable_variables()
        names = [variable.name for variable in tf.compat.v1.global_variables()]
        assert all(name.startswith(in_graph_env.VARIABLE_SCOPE + '/') for name in names)
        assert len(env) == 3


def test_step_writes_the_batch_results_into_variables():
    with tf.Graph().as_default():
        python_batch = _batch('Pendulum-v1', 2)
        env = in_graph_batch_env.InGraphBatchEnv(python_batch)
        action = tf.compat.v1.placeholder(tf.float32, [2, 1])
        reset = env.reset()
        step = _run_step(env, action)
        reference = [gym.make('Pendulum-v1') for _ in range(2)]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            python_batch.reset(seeds=[4, 5])
            [each.reset(seed=seed) for each, seed in zip(reference, [4, 5])]
            actions = np.array([[0.5], [-1.0]], np.float32)
            observ, stored_action, reward, done, terminated = sess.run(
                step, {action: actions})
            expected = [each.step(act) for each, act in zip(reference, actions)]
            np.testing.assert_allclose(observ, [each[0] for each in expected], rtol=1e-6)
            np.testing.assert_allclose(reward, [each[1] for each in expected], rtol=1e-6)
            np.testing.assert_allclose(stored_action, actions)
            assert not done.any() and not terminated.any()
            first = sess.run(reset)
            assert first.shape == (2, 3)


def test_done_and_terminated_follow_the_episode_end():
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(_batch('CartPole-v1', 2))
        reset_all = env.reset()
        reset_first = env.reset([0])
        # Always pushing right ends CartPole within a few dozen steps.
        step = _run_step(env, tf.ones([2], tf.int32))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            assert sess.run(env.done).all()  # Done before the first reset.
            sess.run(reset_all)
            for _ in range(100):
                _, _, _, done, terminated = sess.run(step)
                if done.all():
                    break
            assert done.all() and terminated.all()
            sess.run(reset_first)
            done, terminated = sess.run([env.done, env.terminated])
            assert list(done) == [False, True] and list(terminated) == [False, True]


def test_nan_action_is_reported():
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(_batch('Pendulum-v1', 1))
        step = env.simulate(tf.constant([[np.nan]], tf.float32))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(env.reset())
            with pytest.raises(tf.errors.InvalidArgumentError, match='action'):
                sess.run(step)


def test_single_in_graph_env_steps_and_resets():
    with tf.Graph().as_default():
        python_env = gym.make('Pendulum-v1')
        env = in_graph_env.InGraphEnv(python_env)
        assert env.observ.shape == (3,) and env.done.shape == ()
        reset = env.reset()
        with tf.control_dependencies([env.simulate([1.0])]):
            reward = tf.identity(env.reward.read_value())
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            assert sess.run(reset).shape == (3,)
            assert sess.run(reward) <= 0.0  # Pendulum rewards are costs.
            assert env.spec.id == 'Pendulum-v1'
