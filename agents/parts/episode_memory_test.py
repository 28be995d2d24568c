"""Tests for the in-graph episode memory."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from agents.parts.episode_memory import EpisodeMemory

Transition = collections.namedtuple('Transition', 'observ, reward')


def _template():
    reward = {'done': tf.zeros([], tf.bool), 'count': tf.zeros([], tf.int32)}
    return Transition(tf.zeros([2], tf.float32), reward)


def _initialized_session():
    sess = tf.compat.v1.Session()
    sess.run(tf.compat.v1.global_variables_initializer())
    return sess


def test_append_to_some_rows_and_read_back():
    with tf.Graph().as_default():
        memory = EpisodeMemory(_template(), capacity=3, max_length=4, scope='memory')
        rows = tf.compat.v1.placeholder(tf.int32, [None])
        step = tf.compat.v1.placeholder(tf.float32, [None])
        transition = Transition(
            tf.stack([step, -step], 1),
            {'done': step > 1, 'count': tf.cast(step, tf.int32) * 10})
        append = memory.append(transition, rows)
        episodes, length = memory.data()
        with _initialized_session() as sess:
            sess.run(append, {rows: [0, 2], step: [0, 0]})
            sess.run(append, {rows: [2], step: [1]})
            sess.run(append, {rows: [2, 0], step: [2, 1]})
            episodes, length = sess.run((episodes, length))
    assert isinstance(episodes, Transition)
    np.testing.assert_array_equal(length, [2, 0, 3])
    assert episodes.observ.shape == (3, 4, 2)
    np.testing.assert_array_equal(episodes.observ[0, :2], [[0, 0], [1, -1]])
    np.testing.assert_array_equal(episodes.observ[2, :3], [[0, 0], [1, -1], [2, -2]])
    np.testing.assert_array_equal(episodes.reward['count'][2, :3], [0, 10, 20])
    np.testing.assert_array_equal(episodes.reward['done'][2, :3], [False, False, True])


def test_length_of_rows():
    with tf.Graph().as_default():
        memory = EpisodeMemory(tf.zeros([]), capacity=3, max_length=4, scope='memory')
        append = memory.append(tf.zeros([2]), [1, 2])
        with _initialized_session() as sess:
            sess.run(append)
            sess.run(memory.append(tf.zeros([1]), [2]))
            np.testing.assert_array_equal(sess.run(memory.length()), [0, 1, 2])
            np.testing.assert_array_equal(sess.run(memory.length([2, 0])), [2, 0])


def test_append_beyond_max_length_fails():
    with tf.Graph().as_default():
        memory = EpisodeMemory(tf.zeros([]), capacity=2, max_length=2, scope='memory')
        append = memory.append(tf.ones([1]), [1])
        with _initialized_session() as sess:
            sess.run(append)
            sess.run(append)
            with pytest.raises(tf.errors.InvalidArgumentError, match='max_length 2 exceeded'):
                sess.run(append)
            assert sess.run(memory.length()).tolist() == [0, 2]


def test_row_beyond_capacity_fails():
    with tf.Graph().as_default():
        memory = EpisodeMemory(tf.zeros([]), capacity=2, max_length=2, scope='memory')
        rows = tf.compat.v1.placeholder(tf.int32, [None])
        append = memory.append(tf.zeros([1]), rows)
        with _initialized_session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match='capacity 2 exceeded'):
                sess.run(append, {rows: [2]})


def test_replace_clear_and_data_of_rows():
    with tf.Graph().as_default():
        memory = EpisodeMemory(_template(), capacity=3, max_length=2, scope='memory')
        episodes = Transition(
            tf.reshape(tf.range(8, dtype=tf.float32), [2, 2, 2]),
            {'done': tf.ones([2, 2], tf.bool), 'count': tf.fill([2, 2], 7)})
        replace = memory.replace(episodes, [2, 1], [2, 0])
        data = memory.data([0, 2])
        with _initialized_session() as sess:
            sess.run(replace)
            stored, length = sess.run(data)
            np.testing.assert_array_equal(length, [1, 2])
            np.testing.assert_array_equal(stored.observ[0], [[4, 5], [6, 7]])
            np.testing.assert_array_equal(stored.observ[1], [[0, 1], [2, 3]])
            assert stored.reward['done'].all()
            sess.run(memory.clear([2]))
            np.testing.assert_array_equal(sess.run(memory.length()), [1, 0, 0])
            sess.run(memory.clear())
            np.testing.assert_array_equal(sess.run(memory.length()), [0, 0, 0])


def test_replace_too_long_fails():
    with tf.Graph().as_default():
        memory = EpisodeMemory(tf.zeros([]), capacity=1, max_length=2, scope='memory')
        length = tf.compat.v1.placeholder(tf.int32, [1])
        replace = memory.replace(tf.zeros([1, 2]), length, [0])
        with _initialized_session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match='max_length 2 exceeded'):
                sess.run(replace, {length: [3]})


def test_append_after_replace_continues_episode():
    with tf.Graph().as_default():
        memory = EpisodeMemory(tf.zeros([]), capacity=1, max_length=3, scope='memory')
        replace = memory.replace(tf.constant([[5.0, 6.0, 0.0]]), [2])
        with _initialized_session() as sess:
            sess.run(replace)
            sess.run(memory.append(tf.constant([7.0]), [0]))
            episodes, length = sess.run(memory.data())
    np.testing.assert_array_equal(episodes, [[5, 6, 7]])
    assert length.tolist() == [3]


def test_variables_are_scoped_and_not_trainable():
    with tf.Graph().as_default():
        EpisodeMemory(_template(), capacity=2, max_length=3, scope='ppo_temporary/memory')
        assert not tf.compat.v1.trainable_variables()
        variables = tf.compat.v1.global_variables()
        assert len(variables) == 4
        assert all(variable.name.startswith('ppo_temporary/memory/') for variable in variables)
        shapes = sorted(tuple(variable.shape.as_list()) for variable in variables)
        assert shapes == [(2,), (2, 3), (2, 3), (2, 3, 2)]


def test_invalid_template_and_rows():
    with tf.Graph().as_default():
        unknown = tf.compat.v1.placeholder(tf.float32, [None])
        with pytest.raises(ValueError, match='fully known'):
            EpisodeMemory(unknown, capacity=1, max_length=1, scope='memory')
        memory = EpisodeMemory(tf.zeros([]), capacity=1, max_length=1, scope='other')
        with pytest.raises(ValueError, match='rows must be a vector'):
            memory.length(0)


def test_original_import_path_still_works():
    from agents import parts
    from agents.parts import memory
    assert memory.EpisodeMemory is parts.EpisodeMemory is EpisodeMemory
