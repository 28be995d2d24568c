"""Tests for the training loop of alternating phases."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from agents import tools
from agents.tools import checkpoints
from agents.tools import loop as loop_module


def _define_loop(logdir, durations=(2, 2), train_steps=4, eval_episodes=2, steps_per_run=1,
                 log_every=None):
    envs = [tools.MockEnvironment((1,), (1,), duration, duration) for duration in durations]
    batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))
    loop = tools.Loop(logdir)
    done, score, summary = tools.simulate(
        batch_env, tools.MockAlgorithm(envs), loop.log, loop.reset, loop.steps_per_run,
        loop.advance_step)
    is_training = tf.compat.v1.placeholder(tf.bool, ())
    loop.add_phase('train', done, score, summary, steps=train_steps,
                   log_every=log_every or train_steps, feed={is_training: True},
                   steps_per_run=steps_per_run)
    loop.add_phase('eval', done, score, summary, episodes=eval_episodes,
                   feed={is_training: False}, steps_per_run=steps_per_run)
    return loop, envs


def _checkpoints(logdir, **kwargs):
    """Checkpoints of the loop's step; environment state is not checkpointed."""
    saver = tf.compat.v1.train.Saver([tf.compat.v1.train.get_global_step()])
    return checkpoints.Checkpoints(saver, logdir, **kwargs)


def test_only_training_steps_advance_the_global_step():
    with tf.Graph().as_default():
        loop, envs = _define_loop(None)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            results = list(loop.run(sess, None, max_step=12))
            assert [(each.phase, each.step) for each in results] == [
                ('train', 4), ('eval', 4), ('train', 8), ('eval', 8), ('train', 12),
                ('eval', 12)]
            # Two envs per step: a train phase makes 2 steps, ending one episode of 2.
            assert all(each.env_steps == 4 for each in results)
            np.testing.assert_allclose([each.score for each in results], 2.0)
            assert sess.run(loop.step) == 12
        assert sum(env.steps[-1] for env in envs) > 0


def test_the_last_evaluation_lands_at_the_budget():
    with tf.Graph().as_default():
        loop, _ = _define_loop(None, train_steps=4)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            results = list(loop.run(sess, None, max_step=6))
    assert [(each.phase, each.step) for each in results][-2:] == [('train', 6), ('eval', 6)]


# Steps of both environments the evaluation makes: with single steps, 5 and 1
# in its two rounds; in runs of 4 steps, two runs (5 steps needed) and one.
@pytest.mark.parametrize('steps_per_run, env_steps', [(1, 2 * (5 + 1)), (4, 2 * (8 + 4))])
def test_evaluation_counts_the_first_complete_episode_of_each_environment(
        steps_per_run, env_steps):
    with tf.Graph().as_default():
        # One environment ends episodes after 1 step, the other after 5; three
        # episodes take two rounds of both, and the short episodes the first
        # environment finishes while waiting for the long one do not count.
        loop, _ = _define_loop(
            None, durations=(1, 5), eval_episodes=3, steps_per_run=steps_per_run)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            train, evaluation = list(loop.run(sess, None, max_step=4))
    assert evaluation.episodes == 3
    np.testing.assert_allclose(evaluation.score, (1 + 5 + 1) / 3)
    np.testing.assert_allclose(evaluation.length, (1 + 5 + 1) / 3)
    assert evaluation.env_steps == env_steps
    assert evaluation.step == train.step == 4


def test_summaries_go_to_one_folder_per_phase_and_checkpoints_resume(tmp_path):
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        loop, _ = _define_loop(logdir)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            list(loop.run(sess, _checkpoints(logdir), max_step=8))
            loop.close()
    assert glob.glob(os.path.join(logdir, 'train', 'events.out.tfevents.*'))
    (events,) = glob.glob(os.path.join(logdir, 'eval', 'events.out.tfevents.*'))
    eval_scores = [
        (event.step, value.simple_value)
        for event in tf.compat.v1.train.summary_iterator(events)
        for value in event.summary.value if value.tag == 'mean_score']
    assert eval_scores == [(4, 2.0), (8, 2.0)]
    checkpoint = tf.train.latest_checkpoint(logdir)
    assert checkpoint.endswith('model.ckpt-8')
    with tf.Graph().as_default():
        loop, _ = _define_loop(logdir)
        store = _checkpoints(logdir)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            assert store.restore(sess) == checkpoint
            results = list(loop.run(sess, store, max_step=12))
            assert [each.step for each in results] == [12, 12]


def test_checkpoints_are_also_stored_during_training_when_due_by_wall_time(tmp_path):
    with tf.Graph().as_default():
        loop, _ = _define_loop(str(tmp_path), train_steps=8)
        store = _checkpoints(str(tmp_path), keep=3, every_seconds=0)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            list(loop.run(sess, store, max_step=8))
    # Due at every step of the two environments; the newest three are kept.
    assert [os.path.basename(path) for path in store.paths()] == [
        'model.ckpt-4', 'model.ckpt-6', 'model.ckpt-8']


def test_a_phase_needs_one_positive_length_and_a_new_name():
    with tf.Graph().as_default():
        loop = tools.Loop(None)
        loop.add_phase('train', [True], [1.0], '', steps=1)
        with pytest.raises(ValueError, match='already has a phase'):
            loop.add_phase('train', [True], [1.0], '', steps=1)
        with pytest.raises(ValueError, match='either a positive number'):
            loop.add_phase('eval', [True], [1.0], '', steps=1, episodes=1)
        with pytest.raises(ValueError, match='either a positive number'):
            loop.add_phase('eval', [True], [1.0], '', episodes=0)


def _phases_and_train_summaries(tmp_path, steps_per_run, **kwargs):
    logdir = str(tmp_path / f'runs_of_{steps_per_run}')
    with tf.Graph().as_default():
        loop, _ = _define_loop(logdir, steps_per_run=steps_per_run, **kwargs)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            results = [
                (each.phase, each.step, each.score, each.episodes, each.env_steps)
                for each in loop.run(sess, None, max_step=10)]
            loop.close()
    (events,) = glob.glob(os.path.join(logdir, 'train', 'events.out.tfevents.*'))
    summaries = [
        (event.step, value.tag) for event in tf.compat.v1.train.summary_iterator(events)
        for value in event.summary.value]
    return results, summaries


def test_runs_of_several_steps_end_at_the_phase_end_and_log_like_single_steps(tmp_path):
    # Train phases of 6 steps (3 of both environments) and a budget of 10:
    # runs of up to 4 steps of both must end at steps 6 and 10, and the steps
    # that log (those reaching a multiple of 4) must start their runs.
    single = _phases_and_train_summaries(
        tmp_path, 1, train_steps=6, log_every=4)
    several = _phases_and_train_summaries(tmp_path, 4, train_steps=6, log_every=4)
    assert [(phase, step) for phase, step, *_ in several[0]] == [
        ('train', 6), ('eval', 6), ('train', 10), ('eval', 10)]
    assert several[0][::2] == single[0][::2]  # Evaluations may make more steps.
    assert several[1] == single[1] and [step for step, _ in single[1]] == [4, 4, 8, 8]


def test_an_operation_that_does_not_advance_the_global_step_is_an_error():
    with tf.Graph().as_default():
        envs = [tools.MockEnvironment((1,), (1,), 2, 2)]
        batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))
        loop = tools.Loop(None)
        done, score, summary = tools.simulate(
            batch_env, tools.MockAlgorithm(envs), loop.log, loop.reset, loop.steps_per_run)
        loop.add_phase('train', done, score, summary, steps=4)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            with pytest.raises(RuntimeError, match='after_step=loop.advance_step'):
                list(loop.run(sess, None, max_step=4))


def test_freed_memory_is_returned_after_slow_runs_and_every_ten_seconds(monkeypatch):
    clock, releases, slow = [100.0], [], []
    monkeypatch.setattr(loop_module.time, 'monotonic', lambda: clock[0])
    monkeypatch.setattr(
        loop_module.process_memory, 'release_free_memory', lambda: releases.append(clock[0]))

    class Session(tf.compat.v1.Session):
        def run(self, *args, **kwargs):
            clock[0] += 1.0 if slow else 0.0
            return super().run(*args, **kwargs)

    with tf.Graph().as_default():
        loop, _ = _define_loop(None)
        with Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            runs = loop.run(sess, None)
            next(runs)  # The first train phase: two runs.
            assert releases == [100.0]
            clock[0] = 109.9
            next(runs)  # An evaluation phase.
            assert releases == [100.0]
            clock[0] = 110.0
            next(runs)
            assert releases == [100.0, 110.0]
            slow.append(True)  # Runs of a second each.
            next(runs)  # An evaluation phase of two runs.
            assert releases == [100.0, 110.0, 111.0, 112.0]
