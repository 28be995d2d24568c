"""Tests of taking values one at a time or in batches."""

import pytest
import tensorflow as tf

from agents.tools.batch_shape import as_batch


def test_a_single_value_becomes_a_batch_of_one_and_a_batch_stays():
    shape = tf.TensorShape([3])
    with tf.Graph().as_default():
        assert as_batch(tf.zeros([3]), shape, 'Part').shape.as_list() == [1, 3]
        assert as_batch(tf.zeros([5, 3]), shape, 'Part').shape.as_list() == [5, 3]
        batch = tf.compat.v1.placeholder(tf.float32, [None, None])
        assert as_batch(batch, shape, 'Part') is batch


def test_a_value_of_another_shape_is_refused_naming_the_part():
    with tf.Graph().as_default(), pytest.raises(ValueError, match=(
            r'^Part of shape \(3,\) cannot take values of shape \(5, 4\); '
            r'expected \[batch, \*\[3\]\]\.$')):
        as_batch(tf.zeros([5, 4]), tf.TensorShape([3]), 'Part')
