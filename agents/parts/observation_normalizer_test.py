"""Tests for normalizing the Box parts of observations only."""

import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents.parts.observation_normalizer import ObservationNormalizer

spaces = gym.spaces


def test_only_box_parts_are_normalized_and_integer_parts_keep_their_values():
    space = spaces.Tuple((spaces.Discrete(5), spaces.Box(-10, 10, (2,), np.float32)))
    with tf.Graph().as_default():
        normalizer = ObservationNormalizer(
            space, (tf.zeros([], tf.int32), tf.zeros([2])), clip=5, name='normalize_observ')
        batch = (tf.constant([4, 1]), tf.constant([[1.0, 10.0], [3.0, 30.0]]))
        update = normalizer.update(batch)
        transformed = normalizer.transform(batch)
        summary = normalizer.summary()
        names = sorted(variable.name for variable in tf.compat.v1.global_variables())
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(update)
            indices, normalized = session.run(transformed)
            assert session.run(summary)
    assert indices.dtype == np.int32 and indices.tolist() == [4, 1]
    np.testing.assert_allclose(normalized, [[-0.7071, -0.7071], [0.7071, 0.7071]], atol=1e-3)
    assert all(name.startswith('normalize_observ/part_1/') for name in names), names


def test_a_lone_box_keeps_the_variables_of_one_streaming_normalize():
    with tf.Graph().as_default():
        ObservationNormalizer(
            spaces.Box(-1, 1, (3,)), tf.zeros([3]), clip=5, name='normalize_observ')
        names = sorted(variable.name for variable in tf.compat.v1.global_variables())
    assert names == [
        'normalize_observ/count:0', 'normalize_observ/mean:0',
        'normalize_observ/squared_deviations:0']


def test_observations_without_a_box_part_have_nothing_to_update():
    with tf.Graph().as_default():
        normalizer = ObservationNormalizer(
            spaces.MultiDiscrete([2, 2]), tf.zeros([2], tf.int32), clip=5, name='normalize')
        observ = tf.constant([[1, 0]])
        assert normalizer.transform(observ) is observ
        assert not tf.compat.v1.global_variables()
        with tf.compat.v1.Session() as session:
            assert session.run(normalizer.update(observ)) == b''
