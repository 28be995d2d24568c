"""Tests for the in-graph streaming mean."""

import numpy as np
import pytest
import tensorflow as tf

from agents.tools.streaming_mean import StreamingMean


def test_mean_of_batches_across_runs():
    with tf.Graph().as_default():
        mean = StreamingMean((2,), tf.float32)
        value = tf.compat.v1.placeholder(tf.float32, [None, 2])
        submit = mean.submit(value)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(submit, {value: [[1, 2], [3, 4]]})
            sess.run(submit, {value: [[5, 12]]})
            np.testing.assert_allclose(sess.run(mean.value), [3, 6])
            assert sess.run(mean.count) == 3


def test_single_value_without_batch_dimension():
    with tf.Graph().as_default():
        mean = StreamingMean((), tf.float32)
        submits = [mean.submit(2.0), mean.submit(tf.constant([4.0, 6.0]))]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(submits)
            assert sess.run(mean.value) == pytest.approx(4.0)
            assert sess.run(mean.count) == 3


def test_clear_returns_mean_and_resets():
    with tf.Graph().as_default():
        mean = StreamingMean((), tf.float64)
        value = tf.compat.v1.placeholder(tf.float64, [None])
        submit = mean.submit(value)
        clear = mean.clear()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(submit, {value: [1, 2, 3, 4]})
            assert sess.run(clear) == pytest.approx(2.5)
            assert sess.run(mean.count) == 0
            assert np.isnan(sess.run(clear))  # The mean of nothing.
            sess.run(submit, {value: [10]})
            assert sess.run(clear) == pytest.approx(10)


def test_variables_are_not_trainable():
    with tf.Graph().as_default():
        StreamingMean((3,), tf.float32, name='score')
        assert not tf.compat.v1.trainable_variables()
        names = sorted(variable.name for variable in tf.compat.v1.global_variables())
        assert names == ['score/count:0', 'score/sum:0']


def test_wrong_value_shape():
    with tf.Graph().as_default():
        mean = StreamingMean((3,), tf.float32)
        with pytest.raises(ValueError, match=r'shape \(3,\).*\[batch, \*\[3\]\]'):
            mean.submit(tf.zeros([4, 2]))
