"""Tests for the training loop of alternating phases."""

import glob
import os

import numpy as np
import tensorflow as tf

from agents import tools


def _define_loop(logdir, durations=(2, 2), train_steps=4, eval_steps=2, checkpoint_every=None):
    envs = [tools.MockEnvironment((1,), (1,), duration, duration) for duration in durations]
    batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))
    loop = tools.Loop(logdir)
    done, score, summary = tools.simulate(
        batch_env, tools.MockAlgorithm(envs), loop.log, loop.reset)
    is_training = tf.compat.v1.placeholder(tf.bool, ())
    loop.add_phase('train', done, score, summary, train_steps, report_every=train_steps,
                   log_every=train_steps, checkpoint_every=checkpoint_every,
                   feed={is_training: True})
    loop.add_phase('eval', done, score, summary, eval_steps, report_every=eval_steps,
                   log_every=eval_steps, feed={is_training: False})
    return loop


def _saver():
    """Saver of the loop's step; environment state is not checkpointed."""
    return tf.compat.v1.train.Saver([tf.compat.v1.train.get_global_step()])


def test_phases_alternate_and_report_mean_scores():
    with tf.Graph().as_default():
        loop = _define_loop(None)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            scores = list(loop.run(sess, saver=None, max_step=18))
            # Two envs per step: train reports after 2 steps (4 env steps), eval
            # after 1 step (2 env steps); every episode lasts 2 steps (score 2).
            assert len(scores) == 6
            np.testing.assert_allclose(scores[0::2], 2.0)  # Train phases.
            assert all(np.isnan(scores[1::2]))  # Eval phases end no episode.
            assert sess.run(loop.step) == 18


def test_summaries_go_to_one_folder_per_phase_and_checkpoints_resume(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        loop = _define_loop(logdir, checkpoint_every=4)
        saver = _saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            list(loop.run(sess, saver, max_step=12))
            loop.close()
    assert glob.glob(os.path.join(logdir, 'train', 'events.out.tfevents.*'))
    assert glob.glob(os.path.join(logdir, 'eval', 'events.out.tfevents.*'))
    checkpoint = tf.train.latest_checkpoint(logdir)
    assert checkpoint.endswith('model.ckpt-10')  # The last train phase ended at step 10.
    with tf.Graph().as_default():
        loop = _define_loop(logdir, checkpoint_every=4)
        saver = _saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.restore(sess, checkpoint)
            assert sess.run(loop.step) == 10
            scores = list(loop.run(sess, saver, max_step=16))
            assert len(scores) == 2 and sess.run(loop.step) == 16


def test_adding_a_phase_twice_is_rejected():
    with tf.Graph().as_default():
        loop = tools.Loop(None)
        loop.add_phase('train', [True], [1.0], '', 1)
        try:
            loop.add_phase('train', [True], [1.0], '', 1)
        except ValueError as error:
            assert 'already has a phase' in str(error)
        else:
            raise AssertionError('Expected a ValueError.')
