"""Tests for what a PPO update reports: metric means and the skipped-steps warning."""

import numpy as np
import pytest
import tensorflow as tf

from agents.algorithms.ppo import summaries


def _run(function, metrics):
    """`function(metrics)` built from arrays in a fresh graph, and its value."""
    with tf.Graph().as_default():
        tensors = {name: tf.constant(value, tf.float32) for name, value in metrics.items()}
        result = function(tensors)
        with tf.compat.v1.Session() as session:
            return session.run(result)


def test_the_means_are_over_every_step():
    means = _run(summaries.means, dict(
        kl=[0.1, 0.2, 0.3, 0.6], skipped_updates=[0.0, 1.0, 0.0, 0.0]))
    assert means['kl'] == pytest.approx(0.3)
    assert means['skipped_updates'] == pytest.approx(0.25)


def test_no_skipped_step_prints_nothing(capfd):
    printed = _run(summaries.report_skipped_updates, dict(
        skipped_updates=[0.0, 0.0], gradient_norm=[1.5, 2.5]))
    assert not printed
    assert 'PPO skipped' not in capfd.readouterr().err


def test_skipped_steps_print_their_count_and_the_gradient_norms(capfd):
    printed = _run(summaries.report_skipped_updates, dict(
        skipped_updates=[0.0, 1.0, 0.0], gradient_norm=[1.5, np.inf, 2.5]))
    assert printed
    error = capfd.readouterr().err
    assert 'PPO skipped 1 of 3 update steps' in error
    assert '[1.5 inf 2.5]' in error
