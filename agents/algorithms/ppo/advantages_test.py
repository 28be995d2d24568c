"""Tests for the PPO returns and advantages, against plain NumPy loops."""

import numpy as np
import pytest
import tensorflow as tf

from agents.algorithms.ppo import advantages
from agents.algorithms.ppo import losses

_DISCOUNT = 0.9
_LAMBDA = 0.7
_LENGTH = np.array([6, 3, 0, 1], np.int32)


def _padded_batch(seed):
    """Random rewards and values of shape [4, 6], with NaN in the padding steps."""
    random = np.random.RandomState(seed)
    reward = random.normal(size=(4, 6)).astype(np.float32)
    value = random.normal(size=(4, 6)).astype(np.float32)
    bootstrap = random.normal(size=4).astype(np.float32)
    padding = np.arange(6)[None, :] >= _LENGTH[:, None]
    reward[padding] = np.nan
    value[padding] = np.nan
    return reward, value, bootstrap


def _evaluate(function, *args, **kwargs):
    """Builds `function(*args, **kwargs)` in a fresh graph, feeding arrays with unknown time."""
    with tf.Graph().as_default():
        feeds = {}

        def placeholder(argument):
            if not isinstance(argument, np.ndarray):
                return argument
            shape = [None] * argument.ndim
            tensor = tf.compat.v1.placeholder(tf.as_dtype(argument.dtype), shape)
            feeds[tensor] = argument
            return tensor

        args = [placeholder(argument) for argument in args]
        kwargs = {key: placeholder(argument) for key, argument in kwargs.items()}
        result = function(*args, **kwargs)
        with tf.compat.v1.Session() as session:
            return session.run(result, feeds)


def _lambda_return(reward, value, length, discount, lambda_, bootstrap=None):
    """TD(lambda) return: the value plus the generalized advantage with the same lambda."""
    advantage = advantages.lambda_advantage(reward, value, length, discount, lambda_, bootstrap)
    return advantage + advantages.mask(tf.convert_to_tensor(value, advantage.dtype), length)


def _next_value(value, bootstrap, batch, step, length):
    if step + 1 < length:
        return value[batch, step + 1]
    return 0.0 if bootstrap is None else bootstrap[batch]


def _reference_discounted_return(reward, length, discount, bootstrap):
    return_ = np.zeros_like(reward)
    for batch, sequence_length in enumerate(length):
        accumulated = 0.0 if bootstrap is None else bootstrap[batch]
        for step in reversed(range(sequence_length)):
            accumulated = reward[batch, step] + discount * accumulated
            return_[batch, step] = accumulated
    return return_


def _reference_fixed_step_return(reward, value, length, discount, window, bootstrap):
    return_ = np.zeros_like(reward)
    for batch, sequence_length in enumerate(length):
        for step in range(sequence_length):
            end = min(step + window, sequence_length)
            total = sum(discount ** (k - step) * reward[batch, k] for k in range(step, end))
            if end < sequence_length:
                end_value = value[batch, end]
            else:
                end_value = 0.0 if bootstrap is None else bootstrap[batch]
            return_[batch, step] = total + discount ** (end - step) * end_value
    return return_


def _reference_lambda_advantage(reward, value, length, discount, gae_lambda, bootstrap):
    advantage = np.zeros_like(reward)
    for batch, sequence_length in enumerate(length):
        accumulated = 0.0
        for step in reversed(range(sequence_length)):
            next_value = _next_value(value, bootstrap, batch, step, sequence_length)
            error = reward[batch, step] + discount * next_value - value[batch, step]
            accumulated = error + discount * gae_lambda * accumulated
            advantage[batch, step] = accumulated
    return advantage


def _reference_lambda_return(reward, value, length, discount, lambda_, bootstrap):
    return_ = np.zeros_like(reward)
    for batch, sequence_length in enumerate(length):
        accumulated = 0.0 if bootstrap is None else bootstrap[batch]
        for step in reversed(range(sequence_length)):
            next_value = _next_value(value, bootstrap, batch, step, sequence_length)
            accumulated = reward[batch, step] + discount * (
                (1 - lambda_) * next_value + lambda_ * accumulated)
            return_[batch, step] = accumulated
    return return_


@pytest.mark.parametrize('use_bootstrap', [False, True])
class TestAgainstReference:

    def test_discounted_return(self, use_bootstrap):
        reward, _, bootstrap = _padded_batch(0)
        bootstrap = bootstrap if use_bootstrap else None
        result = _evaluate(
            advantages.discounted_return, reward, _LENGTH, _DISCOUNT, bootstrap=bootstrap)
        expected = _reference_discounted_return(reward, _LENGTH, _DISCOUNT, bootstrap)
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)

    def test_lambda_advantage(self, use_bootstrap):
        reward, value, bootstrap = _padded_batch(2)
        bootstrap = bootstrap if use_bootstrap else None
        result = _evaluate(
            advantages.lambda_advantage, reward, value, _LENGTH, _DISCOUNT, _LAMBDA,
            bootstrap=bootstrap)
        expected = _reference_lambda_advantage(
            reward, value, _LENGTH, _DISCOUNT, _LAMBDA, bootstrap)
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)

    def test_lambda_return(self, use_bootstrap):
        reward, value, bootstrap = _padded_batch(3)
        bootstrap = bootstrap if use_bootstrap else None
        result = _evaluate(
            _lambda_return, reward, value, _LENGTH, _DISCOUNT, _LAMBDA,
            bootstrap=bootstrap)
        expected = _reference_lambda_return(
            reward, value, _LENGTH, _DISCOUNT, _LAMBDA, bootstrap)
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


def test_lambda_return_limits():
    reward, value, bootstrap = _padded_batch(4)
    full, one_step, discounted = _evaluate(
        lambda reward, value, length, bootstrap: (
            _lambda_return(reward, value, length, _DISCOUNT, 1.0, bootstrap),
            _lambda_return(reward, value, length, _DISCOUNT, 0.0, bootstrap),
            advantages.discounted_return(reward, length, _DISCOUNT, bootstrap)),
        reward, value, _LENGTH, bootstrap)
    td_target = _reference_fixed_step_return(reward, value, _LENGTH, _DISCOUNT, 1, bootstrap)
    np.testing.assert_allclose(full, discounted, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(one_step, td_target, rtol=1e-5, atol=1e-5)


def test_results_are_constant_targets():
    with tf.Graph().as_default():
        reward = tf.ones([2, 3])
        value = tf.ones([2, 3])
        length = tf.constant([3, 2])
        results = [
            advantages.discounted_return(reward, length, _DISCOUNT),
            advantages.lambda_advantage(reward, value, length, _DISCOUNT, _LAMBDA),
        ]
        for result in results:
            assert result.shape.as_list() == [2, 3]
            assert tf.gradients(result, [reward, value]) == [None, None]


def test_mask_zeros_padding_of_any_rank():
    tensor = np.full((3, 4, 2), np.nan, np.float32)
    length = np.array([4, 1, 0], np.int32)
    for batch, sequence_length in enumerate(length):
        tensor[batch, :sequence_length] = 1.0
    result = _evaluate(advantages.mask, tensor, length)
    expected = (np.arange(4)[None, :, None] < length[:, None, None]).astype(np.float32)
    np.testing.assert_array_equal(result, np.broadcast_to(expected, tensor.shape))


def test_mask_and_mean_over_time_without_length_take_every_step():
    tensor = np.random.RandomState(0).normal(size=(3, 2)).astype(np.float32)
    full = np.full(3, 2, np.int32)
    np.testing.assert_array_equal(_evaluate(advantages.mask, tensor, None), tensor)
    np.testing.assert_array_equal(
        _evaluate(losses.mean_over_time, tensor, None),
        _evaluate(losses.mean_over_time, tensor, full))


def test_valid_steps_and_their_normalization_leave_out_the_padding():
    reward = np.nan_to_num(_padded_batch(0)[0], nan=1e3)
    valid = reward[np.arange(6)[None, :] < _LENGTH[:, None]]
    np.testing.assert_allclose(_evaluate(advantages.valid_steps, reward, _LENGTH), valid)
    normalized = _evaluate(advantages.normalize_valid_steps, reward, _LENGTH)
    expected = (valid - valid.mean()) / (valid.std() + 1e-8)
    np.testing.assert_allclose(
        normalized[np.arange(6)[None, :] < _LENGTH[:, None]], expected, rtol=1e-5, atol=1e-6)
    assert np.all(normalized[np.arange(6)[None, :] >= _LENGTH[:, None]] == 0)


def test_bad_input_raises_clear_errors():
    with tf.Graph().as_default():
        reward, length = tf.zeros([2, 3]), tf.constant([3, 3])
        with pytest.raises(TypeError, match='Rewards must be floating'):
            advantages.discounted_return(tf.zeros([2, 3], tf.int32), length, _DISCOUNT)
        with pytest.raises(TypeError, match='Lengths must be integers'):
            advantages.discounted_return(reward, tf.zeros([2]), _DISCOUNT)
        with pytest.raises(ValueError, match=r'shape \[batch, time\]'):
            advantages.discounted_return(tf.zeros([2, 3, 1]), length, _DISCOUNT)
        with pytest.raises(ValueError, match='mask needs'):
            advantages.mask(tf.zeros([2]), length)


def test_rollout_advantage_stops_at_episode_ends_and_bootstraps_cut_ones():
    reward = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    value = np.array([[0.5, 0.1, 0.2, 0.3]], np.float32)
    next_value = np.array([[0.1, 9.0, 0.7, 0.8]], np.float32)
    # The first episode terminates after step 1; the second is cut by the rollout.
    terminated = np.array([[False, True, False, False]])
    done = terminated
    discount, gae_lambda = 0.9, 0.5
    expected = np.zeros(4)
    following = 0.0
    for t in reversed(range(4)):
        error = reward[0, t] + discount * (1 - terminated[0, t]) * next_value[0, t] - value[0, t]
        following = error + discount * gae_lambda * (1 - done[0, t]) * following
        expected[t] = following
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        advantage = sess.run(advantages.rollout_advantage(
            reward, value, next_value, terminated, done, discount, gae_lambda))
    np.testing.assert_allclose(advantage[0], expected, rtol=1e-6)
    # The terminated step ignores the value after it.
    np.testing.assert_allclose(advantage[0, 1], reward[0, 1] - value[0, 1], rtol=1e-6)
