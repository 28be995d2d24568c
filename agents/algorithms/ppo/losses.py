"""The policy and value losses of PPO over a batch of `[batch, time]` sequences.

Two policy objectives are available. 'kl_penalty' is BatchPPO's: the
probability ratio times the advantage, minus an adaptive penalty on the KL
divergence from the policy that collected the data, minus a steep quadratic
cutoff once the divergence exceeds a multiple of its target. 'clip' is the
clipped surrogate objective of Schulman et al. (2017). Both may add an entropy
bonus. Every loss is averaged over the valid steps of each sequence first, then
over the sequences.
"""

import tensorflow as tf

from agents.algorithms.ppo import advantages


def policy_loss(config, old_policy, policy, log_prob, old_log_prob, advantage, length,
                penalty, clip_ratio):
    """The policy objective of the config, as a loss to minimize.

    Args:
      config: Config with `objective`, `kl_target`, `kl_cutoff_factor`,
        `kl_cutoff_coef` and `entropy_coef`.
      old_policy: Distribution that collected the data, batch shape `[batch, time]`.
      policy: Current distribution, batch shape `[batch, time]`.
      log_prob: Log probability of the actions under `policy`, `[batch, time]`.
      old_log_prob: The same under `old_policy`.
      advantage: Advantages `[batch, time]`; no gradient flows into them.
      length: Int32 `[batch]`, the valid steps of each sequence; None when
        every step is valid.
      penalty: Scalar tensor, the current KL penalty coefficient.
      clip_ratio: Scalar, the current clip ratio: the 'clip' objective ignores
        ratios further than this from 1, and `clip_fraction` counts them.

    Returns:
      Tuple of the scalar loss and a dict of its parts for summaries:
      `entropy`, `kl`, `surrogate_loss`, `kl_penalty`, `kl_cutoff`,
      `clip_fraction`.
    """
    with tf.name_scope('policy_loss'):
        advantage = tf.stop_gradient(advantage)
        kl = mean_over_time(old_policy.kl(policy), length)
        entropy = mean_over_time(policy.entropy(), length)
        ratio = tf.exp(log_prob - tf.stop_gradient(old_log_prob))
        is_clipped = tf.cast(tf.abs(ratio - 1) > clip_ratio, tf.float32)
        if config.objective == 'clip':
            clipped_ratio = tf.clip_by_value(ratio, 1 - clip_ratio, 1 + clip_ratio)
            surrogate = tf.minimum(ratio * advantage, clipped_ratio * advantage)
            surrogate_loss = -mean_over_time(surrogate, length)
            kl_penalty = kl_cutoff = tf.zeros_like(kl)
        elif config.objective == 'kl_penalty':
            surrogate_loss = -mean_over_time(ratio * advantage, length)
            kl_penalty = penalty * kl
            cutoff_threshold = config.kl_target * config.kl_cutoff_factor
            kl_cutoff = config.kl_cutoff_coef * tf.square(tf.nn.relu(kl - cutoff_threshold))
        else:
            raise ValueError(f'Unknown objective {config.objective!r}.')
        entropy_bonus = config.entropy_coef * entropy
        loss = tf.reduce_mean(surrogate_loss + kl_penalty + kl_cutoff - entropy_bonus)
        parts = dict(
            entropy=entropy, kl=kl, surrogate_loss=surrogate_loss, kl_penalty=kl_penalty,
            kl_cutoff=kl_cutoff, clip_fraction=mean_over_time(is_clipped, length))
        return loss, {name: tf.reduce_mean(value) for name, value in parts.items()}


def value_loss(config, value, old_value, return_, length):
    """Half the squared error of the value against the return, per valid step.

    With `value_clip`, the error of a value moved further than that from
    `old_value` is the larger of its own and that of the value clipped to the
    range, as in Schulman et al.'s PPO implementation.

    Args:
      config: Config with `value_clip` (None for no clipping) and `value_coef`.
      value: Current value estimates `[batch, time]`.
      old_value: Value estimates before the update `[batch, time]`.
      return_: Targets `[batch, time]`.
      length: Int32 `[batch]`, the valid steps of each sequence; None when
        every step is valid.

    Returns:
      Scalar loss, already scaled by `value_coef`.
    """
    with tf.name_scope('value_loss'):
        error = tf.square(return_ - value)
        if config.value_clip:
            clipped = old_value + tf.clip_by_value(
                value - old_value, -config.value_clip, config.value_clip)
            error = tf.maximum(error, tf.square(return_ - clipped))
        return config.value_coef * tf.reduce_mean(0.5 * mean_over_time(error, length))


def mean_over_time(tensor, length):
    """Mean over the valid time steps of each sequence of a [batch, time] tensor.

    A `length` of None means every step is valid, which needs no mask.
    """
    if length is None:
        return tf.reduce_mean(tensor, 1)
    total = tf.reduce_sum(advantages.mask(tensor, length), 1)
    return total / tf.cast(tf.maximum(length, 1), total.dtype)
