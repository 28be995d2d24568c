"""Tests for the schedules of the learning rate and the clip ratio."""

import pytest
import tensorflow as tf

from agents.algorithms.ppo import schedule


def _value(kind, final, step, initial=0.01, steps=100):
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        step = tf.constant(step, tf.int64)
        return sess.run(schedule.scheduled('rate', initial, kind, final, step, steps))


@pytest.mark.parametrize('kind, final, step, value', [
    ('constant', None, 75, 0.01), ('constant', 0.002, 75, 0.01),
    ('linear', None, 0, 0.01), ('linear', None, 75, 0.0025), ('linear', None, 120, 0.0),
    ('linear', 0.002, 0, 0.01), ('linear', 0.002, 75, 0.004), ('linear', 0.002, 120, 0.002),
    ('linear', 0.02, 50, 0.015)])
def test_the_value_follows_its_schedule_over_the_training_steps(kind, final, step, value):
    assert _value(kind, final, step) == pytest.approx(value)


def test_the_ops_sit_under_the_name_of_the_value():
    with tf.Graph().as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        value = schedule.scheduled('clip_ratio', 0.2, 'linear', 0.05, step, 100)
        assert value.name.startswith('clip_ratio/')


def test_an_unknown_schedule_is_refused():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="'cosine'"):
        schedule.scheduled('rate', 0.01, 'cosine', None, tf.constant(0), 100)
