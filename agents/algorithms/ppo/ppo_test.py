"""Tests for the PPO graph: it acts, collects episodes and rollouts, and starts its updates."""

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from agents import tools
from agents.algorithms.ppo import ppo
from agents.algorithms.ppo import testing
from agents.scripts.registry import REGISTRY


def test_update_changes_weights_once_memory_holds_update_every_episodes():
    graph, (algo, is_training, _, step_op) = testing.graph(testing.config(REGISTRY))
    with graph.as_default():
        with testing.session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = testing.weights(sess)
            for _ in range(4):  # The episodes are not done yet.
                sess.run(step_op, {is_training: True})
            assert sess.run(algo._memory_index) == 0
            assert all(np.array_equal(a, b) for a, b in zip(before, testing.weights(sess)))
            sess.run(step_op, {is_training: True})  # Two episodes end: memory full.
            assert sess.run(algo._memory_index) == 0  # Cleared after training.
            after = testing.weights(sess)
            assert any(not np.array_equal(a, b) for a, b in zip(before, after))


def test_evaluation_acts_greedily_and_does_not_learn():
    graph, (algo, is_training, _, step_op) = testing.graph(testing.config(REGISTRY))
    with graph.as_default():
        observ = tf.constant(np.ones((2, 3), np.float32))
        action, _ = algo.perform(tf.range(2), observ)
        with testing.session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = testing.weights(sess)
            for _ in range(10):
                sess.run(step_op, {is_training: False})
            assert all(np.array_equal(a, b) for a, b in zip(before, testing.weights(sess)))
            first, second = (sess.run(action, {is_training: False}) for _ in range(2))
            np.testing.assert_allclose(first, second)  # The mode, not a sample.
            first, second = (sess.run(action, {is_training: True}) for _ in range(2))
            assert not np.allclose(first, second)


def test_summaries_include_losses_when_logging():
    graph, (_, is_training, should_log, step_op) = testing.graph(testing.config(REGISTRY))
    with graph.as_default():
        with testing.session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tags = set()
            for _ in range(5):
                summary = sess.run(step_op[2], {is_training: True, should_log: True})
                tags |= {value.tag for value in tf.compat.v1.Summary.FromString(summary).value}
        expected = {
            'mean_score', 'mean_length', 'perform/action', 'training/learning_rate',
            'training/value_loss', 'training/policy_loss', 'training/entropy', 'training/kl',
            'training/penalty', 'training/kl_change', 'training/skipped_updates'}
        assert expected <= tags, sorted(expected - tags)
        assert any(tag.startswith('weights_policy/') for tag in tags)


def test_truncated_episode_bootstraps_from_its_last_observation():
    with tf.Graph().as_default():
        config = testing.config(REGISTRY, max_length=3)
        truncated = tools.wrappers.LimitDuration(tools.MockEnvironment((3,), (2,), 9, 9), 3)
        terminated = tools.MockEnvironment((3,), (2,), 3, 3)
        batch_env = tools.InGraphBatchEnv(tools.BatchEnv([truncated, terminated], True))
        algo = ppo.PPO(
            batch_env, tf.compat.v1.train.get_or_create_global_step(), tf.constant(True),
            tf.constant(False), config)
        done, _, _ = tools.simulate(batch_env, algo, False, False)
        with testing.session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(3):
                sess.run(done)
            # The third step ended both episodes and filled the memory; the
            # bootstrap values stay in memory until the next update.
            truncated_value, terminated_value = sess.run(algo._bootstrap)
            assert truncated_value != 0.0
            assert terminated_value == 0.0


def test_rollouts_train_every_rollout_length_steps_across_episodes():
    config = testing.config(
        REGISTRY, rollout_length=4, objective='clip', gae_lambda=0.95, minibatch_size=4,
        update_epochs=1, value_clip=0.2, reward_normalization='return')
    # Episodes of 3 steps end inside the first rollout of 4 steps.
    not_yet = testing.train_steps(config, durations=(3, 3), steps=3)
    assert all(np.array_equal(a, b) for a, b in zip(not_yet['before'], not_yet['after']))
    trained = testing.train_steps(config, durations=(3, 3), steps=4)
    assert trained['summary']['training/update_steps'] == 2  # 8 steps, 4 at a time.
    assert any(not np.array_equal(a, b) for a, b in zip(trained['before'], trained['after']))


def test_evaluation_of_rollouts_stores_nothing_and_logs_only_acting():
    config = testing.config(
        REGISTRY, rollout_length=2, objective='clip', gae_lambda=0.95, minibatch_size=2)
    graph, (algo, is_training, should_log, step_op) = testing.graph(config)
    with graph.as_default():
        with testing.session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = testing.weights(sess)
            tags = set()
            for _ in range(5):  # Rollouts of 2 steps would have trained twice.
                summary = sess.run(step_op[2], {is_training: False, should_log: True})
                tags |= {value.tag for value in tf.compat.v1.Summary.FromString(summary).value}
            assert sess.run(algo._rollout.length()).tolist() == [0, 0]
            assert all(np.array_equal(a, b) for a, b in zip(before, testing.weights(sess)))
            sess.run(step_op, {is_training: True, should_log: True})
            assert sess.run(algo._rollout.length()).tolist() == [1, 1]
    assert tags == {'mean_score', 'mean_length', 'perform/action', 'perform/log_prob'}


def test_the_policy_sees_observations_clipped_to_five():
    seen = 5.0
    with tf.Graph().as_default():
        config = testing.config(REGISTRY)
        space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
        observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        policy = ppo.Policy(config, observation_space, space, tf.zeros(3))
        # Statistics of mean 0 and a standard deviation close to 1.
        update = policy.observ_filter.update(tf.constant([[-1.0] * 3, [1.0] * 3]) / np.sqrt(2))
        normalized = policy.observ_filter.transform(tf.constant([[100.0, -100.0, 0.5]]))
        with testing.session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(update)
            result = sess.run(normalized)[0]
    np.testing.assert_allclose(result, [seen, -seen, 0.5], rtol=1e-3)


@pytest.mark.parametrize('normalization, seen', [
    ('reward', 10.0), ('return', 10.0), ('none', 100.0)])
def test_training_sees_scaled_rewards_clipped_to_ten(normalization, seen):
    with tf.Graph().as_default():
        # The filter is the algorithm's; the graph of its steps and updates is not needed.
        envs = [tools.MockEnvironment((3,), (2,), 5, 5) for _ in range(2)]
        algo = ppo.PPO(
            tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True)),
            tf.compat.v1.train.get_or_create_global_step(), tf.constant(True),
            tf.constant(False), testing.config(REGISTRY, reward_normalization=normalization))
        # Rewards whose spread is close to 1, so scaling leaves them almost as they are.
        update = algo._reward_filter.update(tf.constant([-1.0, 1.0]) / np.sqrt(2))
        scaled = algo._reward_filter.transform(tf.constant([100.0, -100.0, 0.5]))
        with testing.session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(update)
            result = sess.run(scaled)
    np.testing.assert_allclose(result, [seen, -seen, 0.5], rtol=1e-3)


def test_original_import_paths_still_work():
    from agents import algorithms
    from agents.algorithms import ppo as ppo_package
    assert algorithms.PPO is ppo_package.PPO is ppo.PPO
