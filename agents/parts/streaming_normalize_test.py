"""Tests for normalization by running statistics."""

import numpy as np
import pytest
import tensorflow as tf

from agents.parts.streaming_normalize import StreamingNormalize


def _initialized_session():
    sess = tf.compat.v1.Session()
    sess.run(tf.compat.v1.global_variables_initializer())
    return sess


def _summary_values(serialized):
    summary = tf.compat.v1.Summary.FromString(serialized)
    return {value.tag: value for value in summary.value}


def _expected_std(values):
    return np.sqrt(values.var(0, ddof=1) + 1e-4)


def test_statistics_match_numpy_for_uneven_batches():
    values = np.random.RandomState(0).normal([3.0, -2.0], [2.0, 0.5], (101, 2))
    with tf.Graph().as_default():
        normalize = StreamingNormalize(tf.zeros([2]), clip=None)
        batch = tf.compat.v1.placeholder(tf.float32, [None, 2])
        update = normalize.update(batch)
        transform = normalize.transform(batch)
        with _initialized_session() as sess:
            for start, stop in [(0, 1), (1, 40), (40, 41), (41, 41), (41, 101)]:
                sess.run(update, {batch: values[start:stop]})
            result = sess.run(transform, {batch: values})
    expected = (values - values.mean(0)) / _expected_std(values)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)


def test_single_value_updates_match_batch_update():
    values = np.random.RandomState(1).uniform(-5, 5, (20,)).astype(np.float32)
    with tf.Graph().as_default():
        one_by_one = StreamingNormalize(tf.zeros([]), name='one_by_one')
        all_at_once = StreamingNormalize(tf.zeros([]), name='all_at_once')
        single = tf.compat.v1.placeholder(tf.float32, [])
        update_single = one_by_one.update(single)
        update_all = all_at_once.update(values)
        probe = tf.constant([4.0, -1.0])
        with _initialized_session() as sess:
            for value in values:
                sess.run(update_single, {single: value})
            sess.run(update_all)
            first, second = sess.run((one_by_one.transform(probe), all_at_once.transform(probe)))
    np.testing.assert_allclose(first, second, rtol=1e-5)
    expected = (np.array([4.0, -1.0]) - values.mean()) / _expected_std(values)
    np.testing.assert_allclose(first, expected, rtol=1e-4)


def test_options_center_scale_clip():
    values = np.array([[0.0], [10.0], [20.0]], np.float32)  # Mean 10, deviation 10.
    with tf.Graph().as_default():
        variants = {
            'none': StreamingNormalize(tf.zeros([1]), center=False, scale=False, clip=0,
                                       name='none'),
            'center': StreamingNormalize(tf.zeros([1]), scale=False, clip=0, name='center'),
            'scale': StreamingNormalize(tf.zeros([1]), center=False, clip=0, name='scale'),
            'clip': StreamingNormalize(tf.zeros([1]), clip=0.5, name='clip'),
        }
        updates = [normalize.update(values) for normalize in variants.values()]
        probe = tf.constant([[30.0]])
        transforms = {key: normalize.transform(probe) for key, normalize in variants.items()}
        with _initialized_session() as sess:
            sess.run(updates)
            result = sess.run(transforms)
    std = np.sqrt(100 + 1e-4)
    assert result['none'][0, 0] == pytest.approx(30)
    assert result['center'][0, 0] == pytest.approx(20)
    assert result['scale'][0, 0] == pytest.approx(30 / std)
    assert result['clip'][0, 0] == pytest.approx(0.5)


def test_no_scaling_before_two_values():
    with tf.Graph().as_default():
        normalize = StreamingNormalize(tf.zeros([]), clip=None)
        update = normalize.update(tf.constant([4.0]))
        transform = normalize.transform(tf.constant(10.0))
        with _initialized_session() as sess:
            assert sess.run(transform) == pytest.approx(10)
            sess.run(update)
            assert sess.run(transform) == pytest.approx(6)


def test_transform_keeps_extra_leading_dimensions_and_casts():
    with tf.Graph().as_default():
        normalize = StreamingNormalize(tf.zeros([3]))
        transform = normalize.transform(tf.ones([2, 5, 3], tf.int32))
        assert transform.dtype == tf.float32
        assert transform.shape.as_list() == [2, 5, 3]


def test_transform_rejects_non_finite_results():
    with tf.Graph().as_default():
        normalize = StreamingNormalize(tf.zeros([]), clip=None)
        transform = normalize.transform(tf.constant(np.nan))
        with _initialized_session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match='StreamingNormalize'):
                sess.run(transform)


def test_summaries():
    with tf.Graph().as_default():
        scalar = StreamingNormalize(tf.zeros([]), name='reward')
        vector = StreamingNormalize(tf.zeros([3]), name='observ')
        updates = [scalar.update(tf.constant([1.0, 3.0])), vector.update(tf.ones([2, 3]))]
        summaries = [scalar.summary(), vector.summary()]
        with _initialized_session() as sess:
            assert sess.run(summaries) == [b'', b'']
            update_summary = _summary_values(sess.run(updates)[0])
            scalar_summary, vector_summary = [
                _summary_values(serialized) for serialized in sess.run(summaries)]
    assert update_summary['reward/update/value'].simple_value == 2.0
    assert sorted(scalar_summary) == ['reward/summary/mean', 'reward/summary/stddev']
    assert scalar_summary['reward/summary/mean'].simple_value == pytest.approx(2)
    assert scalar_summary['reward/summary/stddev'].simple_value == pytest.approx(
        np.sqrt(2 + 1e-4), rel=1e-5)
    assert sorted(vector_summary) == ['observ/summary/mean', 'observ/summary/stddev']
    assert all(value.HasField('histo') for value in vector_summary.values())


def test_summary_after_one_value_has_only_the_mean():
    with tf.Graph().as_default():
        normalize = StreamingNormalize(tf.zeros([2]), name='observ')
        update = normalize.update(tf.ones([1, 2]))
        summary = normalize.summary()
        with _initialized_session() as sess:
            sess.run(update)
            assert sorted(_summary_values(sess.run(summary))) == ['observ/summary/mean']


def test_update_of_empty_batch_changes_nothing():
    with tf.Graph().as_default():
        normalize = StreamingNormalize(tf.zeros([]), clip=None)
        batch = tf.compat.v1.placeholder(tf.float32, [None])
        update = normalize.update(batch)
        transform = normalize.transform(tf.constant(5.0))
        with _initialized_session() as sess:
            sess.run(update, {batch: [1.0, 3.0]})
            before = sess.run(transform)
            assert sess.run(update, {batch: []}) == b''
            assert sess.run(transform) == before


def test_variables_are_not_trainable():
    with tf.Graph().as_default():
        StreamingNormalize(tf.zeros([2]), name='observ_filter')
        assert not tf.compat.v1.trainable_variables()
        names = sorted(variable.name for variable in tf.compat.v1.global_variables())
        assert names == ['observ_filter/count:0', 'observ_filter/mean:0',
                         'observ_filter/squared_deviations:0']


def test_invalid_shapes():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='fully known'):
            StreamingNormalize(tf.compat.v1.placeholder(tf.float32, [None]))
        normalize = StreamingNormalize(tf.zeros([3]))
        with pytest.raises(ValueError, match=r'expected \[batch, \*\[3\]\]'):
            normalize.update(tf.zeros([4, 2]))


def test_original_import_path_still_works():
    from agents import parts
    from agents.parts import normalize
    assert normalize.StreamingNormalize is parts.StreamingNormalize is StreamingNormalize
