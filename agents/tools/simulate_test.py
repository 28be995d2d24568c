"""Tests for the fused simulation operation."""

import numpy as np
import pytest
import tensorflow as tf

from agents import tools


def _define_simulation(durations, reset=False):
    envs = [tools.MockEnvironment((2,), (1,), duration, duration) for duration in durations]
    batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))
    algo = tools.MockAlgorithm(envs)
    reset = tf.compat.v1.placeholder_with_default(reset, ())
    done, score, summary = tools.simulate(batch_env, algo, log=True, reset=reset)
    return envs, reset, done, score, summary


def test_done_flags_scores_and_lengths_over_several_episodes():
    with tf.Graph().as_default():
        envs, _, done, score, _ = _define_simulation([2, 3, 4])
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            dones, scores = [], []
            for _ in range(12):
                step_done, step_score = sess.run([done, score])
                dones.append(step_done)
                scores.append(step_score)
        dones, scores = np.array(dones), np.array(scores)
        # Each env's episode ends every `duration` steps; its score then equals
        # the duration because every step earns a reward of one.
        for index, duration in enumerate([2, 3, 4]):
            expected = [(step + 1) % duration == 0 for step in range(12)]
            assert list(dones[:, index]) == expected
            np.testing.assert_allclose(scores[dones[:, index], index], duration)
            assert envs[index].durations == [duration] * (12 // duration)


def test_reset_forces_all_environments_to_start_new_episodes():
    with tf.Graph().as_default():
        envs, reset, done, score, _ = _define_simulation([5, 5])
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(3):
                sess.run(done)
            _, step_score = sess.run([done, score], {reset: True})
            np.testing.assert_allclose(step_score, [1, 1])  # Fresh episodes.
            assert [len(env.durations) for env in envs] == [2, 2]
            assert [env.steps[0] for env in envs] == [3, 3]


def test_summary_holds_mean_score_and_length_of_finished_episodes():
    with tf.Graph().as_default():
        _, _, done, _, summary = _define_simulation([2, 4])
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            values = {}
            for _ in range(4):
                _, serialized = sess.run([done, summary])
                if serialized:
                    parsed = tf.compat.v1.Summary.FromString(serialized)
                    values.update({each.tag: each.simple_value for each in parsed.value})
            # Both episodes end at step four: the mean of the step-2 episode ended
            # then (score 2) and the step-4 episode (score 4) is reported.
            assert values['mean_score'] == 3.0
            assert values['mean_length'] == 3.0


def test_several_steps_in_one_run_equal_single_steps():
    def run(steps_per_run, runs):
        with tf.Graph().as_default():
            envs = [tools.MockEnvironment((2,), (1,), duration, duration) for duration in (2, 3)]
            batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))
            steps_per_run_tensor = tf.compat.v1.placeholder(tf.int32, ())
            log = tf.compat.v1.placeholder(tf.bool, ())
            outputs = tools.simulate(
                batch_env, tools.MockAlgorithm(envs), log, steps_per_run=steps_per_run_tensor)
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                done, score, summary = zip(*[
                    sess.run(outputs, {steps_per_run_tensor: steps_per_run, log: True})
                    for _ in range(runs)])
        return np.concatenate(done), np.concatenate(score), summary

    done, score, summary = run(1, 6)
    done_k, score_k, summary_k = run(3, 2)
    assert done.shape == (6, 2)
    np.testing.assert_array_equal(done_k, done)
    np.testing.assert_array_equal(score_k, score)
    # Logging applies to the first step of a run. The first, at step 1, has no
    # finished episode to report; the second, at step 4, reports the two
    # episodes of length 2 and the one of length 3 that ended since.
    assert not summary_k[0]
    parsed = tf.compat.v1.Summary.FromString(summary_k[1])
    assert {value.tag: value.simple_value for value in parsed.value} == pytest.approx({
        'mean_score': 7 / 3, 'mean_length': 7 / 3})
