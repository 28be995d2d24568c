"""Tests for encoding observations of any space into one float vector."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from agents.parts.observation_encoder import ObservationEncoder

spaces = gym.spaces


def _encode(space, observ):
    with tf.Graph().as_default():
        encoder = ObservationEncoder(space)
        encoded = encoder(tf.nest.map_structure(tf.constant, observ))
        with tf.compat.v1.Session() as session:
            return encoder.size, session.run(encoded)


def test_a_lone_box_passes_through_for_the_network_to_flatten():
    with tf.Graph().as_default():
        observ = tf.zeros([2, 5, 3, 4])
        assert ObservationEncoder(spaces.Box(-1, 1, (3, 4))).__call__(observ) is observ


@pytest.mark.parametrize('space, observ, expected', [
    (spaces.Discrete(3, start=-1), [[-1, 1]], [[[1, 0, 0], [0, 0, 1]]]),
    (spaces.MultiDiscrete([2, 3]), [[[1, 2]]], [[[0, 1, 0, 0, 1]]]),
    (spaces.MultiDiscrete([3, 3], start=[1, 0]), [[[3, 0]]], [[[0, 0, 1, 1, 0, 0]]]),
    (spaces.MultiBinary(3), [[[1, 0, 1]]], [[[1.0, 0.0, 1.0]]]),
])
def test_integer_parts_become_one_hot_vectors_or_flags(space, observ, expected):
    size, encoded = _encode(space, np.array(observ, np.int32))
    assert encoded.dtype == np.float32 and size == np.shape(expected)[-1]
    np.testing.assert_array_equal(encoded, expected)


def test_tuple_parts_come_in_order_and_dict_parts_by_sorted_key():
    space = spaces.Dict({
        'z_flags': spaces.MultiBinary(2),
        'a_pair': spaces.Tuple((spaces.Discrete(2), spaces.Box(-1, 1, (2, 1))))})
    observ = {
        'z_flags': np.array([[[1, 1]]], np.int32),
        'a_pair': (np.array([[1]], np.int32), np.array([[[[0.5], [-0.5]]]], np.float32))}
    size, encoded = _encode(space, observ)
    assert size == 6
    np.testing.assert_array_equal(encoded, [[[0, 1, 0.5, -0.5, 1, 1]]])


def test_a_space_it_cannot_encode_is_refused_naming_it():
    with pytest.raises(ValueError, match=r'Text\('):
        ObservationEncoder(spaces.Tuple((spaces.Discrete(2), spaces.Text(4))))
