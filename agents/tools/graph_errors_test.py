"""Tests of one-line summaries of failed graph operations."""

import numpy as np
import pytest
import tensorflow as tf

from agents import tools
from agents.tools import graph_errors


def _run(fetch):
    with tf.compat.v1.Session() as sess:
        with pytest.raises(tf.errors.OpError) as error:
            sess.run(fetch)
    return error.value


def test_an_exception_in_python_code_of_the_graph_is_an_environment_error():
    def step(action):
        raise RuntimeError('worker 3 died\nTraceback (most recent call last): ...')

    with tf.Graph().as_default():
        error = _run(tf.numpy_function(step, [tf.constant(1.0)], tf.float32, name='step'))
    assert graph_errors.is_environment_error(error)
    assert graph_errors.summarize(error) == 'RuntimeError: worker 3 died'


def test_an_environment_error_inside_a_loop_of_the_graph_is_an_environment_error():
    class Failing(tools.MockEnvironment):
        def step(self, action):
            raise FloatingPointError('the simulator diverged')

    with tf.Graph().as_default():
        envs = [Failing((1,), (1,), 5, 5)]
        batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))
        done, _, _ = tools.simulate(batch_env, tools.MockAlgorithm(envs), steps_per_run=3)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            with pytest.raises(tf.errors.OpError) as error:
                sess.run(done)
        error = error.value
    assert graph_errors.is_environment_error(error)
    assert graph_errors.summarize(error) == 'FloatingPointError: the simulator diverged'


def test_other_errors_name_their_type_and_cause():
    with tf.Graph().as_default():
        error = _run(tf.debugging.check_numerics(tf.constant(np.nan), 'loss'))
    assert not graph_errors.is_environment_error(error)
    summary = graph_errors.summarize(error)
    assert summary.startswith('InvalidArgumentError: loss') and '\n' not in summary


def test_errors_without_an_operation():
    error = ValueError('The passed save_path is not a valid checkpoint: x')
    assert not graph_errors.is_environment_error(error)
    assert graph_errors.summarize(error) == (
        'ValueError: The passed save_path is not a valid checkpoint: x')
