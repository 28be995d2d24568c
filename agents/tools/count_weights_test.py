"""Tests for counting trainable parameters."""

import pytest
import tensorflow as tf

from agents.tools import count_weights


def _define_variables():
    with tf.compat.v1.variable_scope('policy'):
        tf.compat.v1.get_variable('kernel', [3, 4])
        tf.compat.v1.get_variable('bias', [4])
    with tf.compat.v1.variable_scope('policy_value'):
        tf.compat.v1.get_variable('kernel', [4, 1])
    tf.compat.v1.get_variable('step', [], trainable=False)


def test_counts_all_trainable_variables():
    with tf.Graph().as_default():
        _define_variables()
        assert count_weights() == 12 + 4 + 4


def test_scope_does_not_match_longer_scope_names():
    with tf.Graph().as_default():
        _define_variables()
        assert count_weights('policy') == 16
        assert count_weights('policy/') == 16
        assert count_weights('policy_value') == 4


def test_exclude_pattern():
    with tf.Graph().as_default():
        _define_variables()
        assert count_weights(exclude=r'.*/bias') == 16
        assert count_weights('policy', exclude=r'policy/kernel') == 4


def test_explicit_graph():
    graph = tf.Graph()
    with graph.as_default():
        _define_variables()
    with tf.Graph().as_default():
        assert count_weights() == 0
        assert count_weights(graph=graph) == 20


def test_unknown_shape_raises():
    with tf.Graph().as_default():
        tf.compat.v1.Variable(
            tf.zeros([2]), shape=tf.TensorShape([None]), name='dynamic')
        with pytest.raises(ValueError, match='dynamic.*not fully known'):
            count_weights()
