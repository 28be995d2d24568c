"""Tests of reading evaluation scores from event files and plotting them."""

import os

import numpy as np
import pytest
import tensorflow as tf

from agents.scripts.plotting import curves


def write_scores(run_dir, steps, scores, tag='mean_score', suffix=''):
    """Write scores the way the loop does: a graph's scalar summary op through a FileWriter.

    Writers started within one second share a file name unless their suffixes differ.
    """
    with tf.Graph().as_default():
        value = tf.compat.v1.placeholder(tf.float32, ())
        summary = tf.compat.v1.summary.scalar(tag, value)
        writer = tf.compat.v1.summary.FileWriter(
            os.path.join(run_dir, 'eval'), filename_suffix=suffix)
        with tf.compat.v1.Session() as sess:
            for step, score in zip(steps, scores):
                writer.add_summary(sess.run(summary, {value: score}), step)
        writer.close()


def write_tensor_scores(run_dir, steps, scores, tag):
    """Write scores as the TF2 summary API stores them: tensors of the scalars plugin.

    Written as protos, since the suite may have turned off eager execution, in
    which `tf.summary.scalar` writes nothing outside a session.
    """
    metadata = tf.compat.v1.SummaryMetadata(
        plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name='scalars'))
    with tf.Graph().as_default():
        writer = tf.compat.v1.summary.FileWriter(
            os.path.join(run_dir, 'eval'), filename_suffix='.v2')
        for step, score in zip(steps, scores):
            value = tf.compat.v1.Summary.Value(
                tag=tag, metadata=metadata,
                tensor=tf.make_tensor_proto(np.float32(score)))
            writer.add_summary(tf.compat.v1.Summary(value=[value]), step)
        writer.close()


def test_read_scores_of_a_run(tmp_path):
    write_scores(str(tmp_path), [300, 100, 200], [3.0, 1.0, 2.5])
    steps, scores = curves.read_scores(str(tmp_path))
    np.testing.assert_array_equal(steps, [100, 200, 300])
    np.testing.assert_allclose(scores, [1.0, 2.5, 3.0])


def test_read_scores_prefers_the_first_tag_and_reads_tensor_summaries(tmp_path):
    write_scores(str(tmp_path), [10, 20], [-1.0, -2.0], tag='mean_score')
    write_tensor_scores(str(tmp_path), [10, 20], [5.0, 6.0], tag=curves.SCORE_TAGS[0])
    steps, scores = curves.read_scores(str(tmp_path))
    np.testing.assert_array_equal(steps, [10, 20])
    np.testing.assert_allclose(scores, [5.0, 6.0])


def test_resumed_run_keeps_the_later_value_of_a_step(tmp_path):
    write_scores(str(tmp_path), [100, 200], [1.0, 2.0])
    # Resumed from step 100.
    write_scores(str(tmp_path), [200, 300], [20.0, 30.0], suffix='.resumed')
    steps, scores = curves.read_scores(str(tmp_path))
    np.testing.assert_array_equal(steps, [100, 200, 300])
    np.testing.assert_allclose(scores, [1.0, 20.0, 30.0])


def test_run_without_the_tag_is_a_clear_error(tmp_path):
    write_scores(str(tmp_path), [100], [1.0], tag='something_else')
    with pytest.raises(curves.NoScoresError, match='No evaluation score'):
        curves.read_scores(str(tmp_path))


def test_read_curves_groups_runs_of_one_config(tmp_path):
    write_scores(str(tmp_path / '20260101T000000-pendulum'), [100, 200], [1.0, 2.0])
    write_scores(str(tmp_path / 'seed1-pendulum'), [100, 200], [3.0, 4.0])
    write_scores(str(tmp_path / '20260101T000000-cartpole'), [100], [9.0])
    os.makedirs(tmp_path / '20260102T000000-cartpole' / 'eval')  # No evaluation yet.
    runs_by_label = curves.read_curves(str(tmp_path))
    assert sorted(runs_by_label) == ['cartpole', 'pendulum']
    assert len(runs_by_label['pendulum']) == 2 and len(runs_by_label['cartpole']) == 1
    # A run directory itself is a log directory of one run.
    assert list(curves.read_curves(str(tmp_path / 'seed1-pendulum'))) == ['pendulum']


def test_read_curves_of_a_directory_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(curves.NoScoresError, match='No run under'):
        curves.read_curves(str(tmp_path))
    with pytest.raises(curves.NoScoresError, match='No directory'):
        curves.read_curves(str(tmp_path / 'missing'))


def test_aggregate_takes_mean_and_range_over_the_runs_that_reach_a_step():
    runs = [
        (np.array([0, 100, 200]), np.array([0.0, 10.0, 20.0])),
        (np.array([0, 200]), np.array([2.0, 4.0])),     # Interpolated at 100.
        (np.array([0, 100]), np.array([-3.0, 1.0]))]    # Shorter run.
    steps, mean, low, high = curves.aggregate(runs)
    np.testing.assert_array_equal(steps, [0, 100, 200])
    np.testing.assert_allclose(mean, [-1 / 3, 14 / 3, 12.0])
    np.testing.assert_allclose(low, [-3.0, 1.0, 4.0])
    np.testing.assert_allclose(high, [2.0, 10.0, 20.0])


def test_plot_curves_draws_each_label_with_its_band(tmp_path):
    from matplotlib import image
    runs_by_label = {
        'low': [(np.array([0, 100]), np.array([0.0, 1.0])),
                (np.array([0, 100]), np.array([1.0, 2.0]))],
        'high': [(np.array([0, 100]), np.array([5.0, 6.0]))]}
    path = curves.plot_curves(runs_by_label, str(tmp_path / 'plots' / 'curves.png'), 'Title')
    pixels = image.imread(path)
    assert pixels.shape[:2] == (420, 700)
    # The default colours of the first two lines appear: blue and orange.
    colours = {tuple(np.round(pixel[:3] * 255).astype(int)) for pixel in pixels.reshape(-1, 4)}
    assert (31, 119, 180) in colours and (255, 127, 14) in colours
