"""Returns and advantages for PPO, computed in the graph over padded batches.

Every function takes rewards and values of shape `[batch, time]` whose
sequences are padded to a common length, with `length [batch]` giving the
number of real steps of each sequence. `value[:, t]` estimates the return
from the observation seen at step `t`. Padding steps are ignored on input
(whatever they hold) and are zero in the results.

`bootstrap [batch]` is the value of the observation after each sequence's last
step, for sequences that were cut off rather than ended (a time limit or a
chunk of an episode): it stands for the rewards the sequence did not see.
Leave it `None` for episodes that terminated. Results are training targets,
so no gradient flows through them.
"""

import tensorflow as tf


def mask(tensor, length):
    """Sets the padding steps of a batch of sequences to zero.

    Args:
      tensor: Tensor `[batch, time, ...]`.
      length: Integer tensor `[batch]`, the number of valid steps; None when
        every step is valid.

    Returns:
      Tensor like `tensor`, zero at and after each sequence's length; NaN or
      infinite padding becomes zero too.
    """
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank is not None and tensor.shape.rank < 2:
        raise ValueError(f'mask needs a tensor of shape [batch, time, ...], got {tensor.shape}.')
    if length is None:
        return tensor
    with tf.name_scope('mask'):
        valid = tf.sequence_mask(length, tf.shape(tensor)[1])
        extra_dims = tf.ones([tf.rank(tensor) - 2], tf.int32)
        valid = tf.reshape(valid, tf.concat([tf.shape(valid), extra_dims], 0))
        return tf.where(valid, tensor, tf.zeros_like(tensor))


def valid_steps(tensor, length):
    """The entries of a `[batch, time, ...]` tensor at the valid steps of each sequence.

    Returns:
      Tensor `[valid steps, ...]`, the sequences' valid steps one after another.
    """
    return tf.boolean_mask(tensor, tf.sequence_mask(length, tf.shape(tensor)[1]))


def normalize_valid_steps(tensor, length):
    """Shifts and scales a `[batch, time]` tensor to zero mean and unit variance.

    The mean and variance are those of the valid steps; padding, which must be
    finite here, is zero in the result. Advantages are normalized this way
    before an update.
    """
    valid = tf.sequence_mask(length, tf.shape(tensor)[1], tensor.dtype)
    count = tf.maximum(tf.reduce_sum(valid), 1.0)
    mean = tf.reduce_sum(tensor * valid) / count
    variance = tf.reduce_sum(tf.square(tensor - mean) * valid) / count
    return mask((tensor - mean) / (tf.sqrt(variance) + 1e-8), length)


def discounted_return(reward, length, discount, bootstrap=None):
    """Discounted sum of the future rewards of each step.

    Args:
      reward: Float tensor `[batch, time]`.
      length: Integer tensor `[batch]`.
      discount: Discount factor (float or scalar tensor).
      bootstrap: Optional float tensor `[batch]`, the value after the last step.

    Returns:
      Float tensor `[batch, time]`.
    """
    with tf.name_scope('discounted_return'):
        reward, length, discount = _check_inputs(reward, length, discount)
        rewards = mask(reward, length) + discount * _at_step(bootstrap, length - 1, reward)
        return_ = _reverse_discounted_sum(rewards, discount * _valid_float(length, reward))
        return _as_target(return_, 'return')


def lambda_advantage(reward, value, length, discount, gae_lambda, bootstrap=None):
    """Generalized advantage estimation (Schulman et al. 2015).

    The advantage of step `t` is the sum over `k` of `(discount * gae_lambda)^k`
    times the temporal-difference error of step `t + k`.

    Args:
      reward: Float tensor `[batch, time]`.
      value: Float tensor `[batch, time]`.
      length: Integer tensor `[batch]`.
      discount: Discount factor (float or scalar tensor).
      gae_lambda: Trade-off between bias (0) and variance (1), float or scalar tensor.
      bootstrap: Optional float tensor `[batch]`, the value after the last step.

    Returns:
      Float tensor `[batch, time]`.
    """
    with tf.name_scope('lambda_advantage'):
        reward, length, discount = _check_inputs(reward, length, discount)
        value = mask(tf.convert_to_tensor(value, reward.dtype), length)
        gae_lambda = tf.convert_to_tensor(gae_lambda, reward.dtype)
        next_value = tf.concat([value[:, 1:], tf.zeros_like(value[:, :1])], 1)
        next_value += _at_step(bootstrap, length - 1, reward)
        error = mask(reward + discount * next_value - value, length)
        advantage = _reverse_discounted_sum(
            error, discount * gae_lambda * _valid_float(length, reward))
        return _as_target(advantage, 'advantage')


def rollout_advantage(reward, value, next_value, terminated, done, discount, gae_lambda):
    """Generalized advantages of fixed-length rollouts that span several episodes.

    Each row holds consecutive steps of one environment; an episode may end at
    any step and the next one start at the step after it. The temporal
    difference error of step `t` uses the value of the observation after it,
    `next_value[:, t]`, which is zero where the episode terminated; where it
    was truncated, or at the last step of the rollout, that value stands for
    the rewards the rollout did not see. Advantages do not flow across
    episode ends (`done`).

    Args:
      reward: Float tensor `[batch, time]`.
      value: Float tensor `[batch, time]`, the value of each step's observation.
      next_value: Float tensor `[batch, time]`, the value of the observation
        after each step.
      terminated: Bool tensor `[batch, time]`, episodes that ended for good.
      done: Bool tensor `[batch, time]`, episodes that ended for any reason.
      discount: Discount factor (float or scalar tensor).
      gae_lambda: Trade-off between bias (0) and variance (1), float or scalar tensor.

    Returns:
      Float tensor `[batch, time]`.
    """
    with tf.name_scope('rollout_advantage'):
        reward = tf.convert_to_tensor(reward)
        if reward.shape.rank not in (None, 2):
            raise ValueError(f'Expected rewards of shape [batch, time], got {reward.shape}.')
        discount = tf.convert_to_tensor(discount, reward.dtype)
        continues = 1 - tf.cast(terminated, reward.dtype)
        error = reward + discount * continues * next_value - value
        factor = discount * tf.convert_to_tensor(gae_lambda, reward.dtype) * (
            1 - tf.cast(done, reward.dtype))
        return _as_target(_reverse_discounted_sum(error, factor), 'advantage')


def _check_inputs(reward, length, discount):
    """Converts the common arguments and checks their ranks and dtypes."""
    reward = tf.convert_to_tensor(reward)
    length = tf.convert_to_tensor(length)
    if not reward.dtype.is_floating:
        raise TypeError(f'Rewards must be floating point, got {reward.dtype.name}.')
    if not length.dtype.is_integer:
        raise TypeError(f'Lengths must be integers, got {length.dtype.name}.')
    if reward.shape.rank not in (None, 2) or length.shape.rank not in (None, 1):
        raise ValueError(
            'Expected rewards and values of shape [batch, time] and lengths of shape '
            f'[batch], got rewards {reward.shape} and lengths {length.shape}.')
    return reward, tf.cast(length, tf.int32), tf.convert_to_tensor(discount, reward.dtype)


def _valid_float(length, like):
    return tf.sequence_mask(length, tf.shape(like)[1], dtype=like.dtype)


def _at_step(bootstrap, step, like):
    """A tensor like `like [batch, time]` holding `bootstrap [batch]` at `step [batch]`.

    Zero everywhere when `bootstrap` is None.
    """
    if bootstrap is None:
        return tf.zeros_like(like)
    bootstrap = tf.convert_to_tensor(bootstrap, like.dtype)
    return tf.one_hot(step, tf.shape(like)[1], dtype=like.dtype) * bootstrap[:, None]


def _reverse_discounted_sum(sequence, factor):
    """Computes `out[t] = sequence[t] + factor[t] * out[t + 1]` along the time axis."""
    result = tf.scan(
        lambda accumulated, current: current[0] + current[1] * accumulated,
        (tf.transpose(sequence), tf.transpose(factor)),
        tf.zeros_like(sequence[:, 0]), reverse=True)
    return tf.transpose(result)


def _as_target(tensor, name):
    return tf.debugging.check_numerics(tf.stop_gradient(tensor), f'Found NaN or inf in {name}')
