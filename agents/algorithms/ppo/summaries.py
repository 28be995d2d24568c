"""What an update of PPO reports: TensorBoard summaries and printed warnings.

Summaries are written with exactly the tags given (`training/kl`,
`perform/action`), which TensorFlow's name scopes would otherwise prefix, so
the names in TensorBoard stay the same wherever the graph builds them:
inside conditionals, loops and functions.
"""

import tensorflow as tf


def scalar(tag, value):
    """Scalar summary with exactly this tag, also inside conditionals and loops."""
    return tf.raw_ops.ScalarSummary(tags=tag, values=tf.cast(value, tf.float32))


def histogram(tag, values):
    """Histogram summary with exactly this tag, also inside conditionals and loops."""
    return tf.raw_ops.HistogramSummary(tag=tag, values=tf.cast(values, tf.float32))


def means(metrics):
    """Each update metric's mean over the update steps.

    Args:
      metrics: Dict of `[steps]` tensors, one value per update step.

    Returns:
      Dict of scalar tensors with the same keys.
    """
    return {name: tf.reduce_mean(value) for name, value in metrics.items()}


def report_skipped_updates(metrics):
    """Print how many update steps were skipped and why, if any; an op to run after them.

    A step is skipped when its loss or gradients are not finite. The message
    lists the gradient norms of the update's steps.

    Args:
      metrics: Dict of `[steps]` tensors with `skipped_updates` and
        `gradient_norm`.

    Returns:
      Boolean scalar tensor, whether a message was printed.
    """
    skipped = metrics['skipped_updates']
    count = tf.reduce_sum(skipped)

    def report():
        gradient_norm = metrics['gradient_norm']
        message = tf.print(
            'PPO skipped', tf.cast(count, tf.int32), 'of', tf.size(gradient_norm),
            'update steps: the loss or gradients were not finite (gradient norms',
            gradient_norm, '). Check the rewards and observations for extreme '
            'values.', output_stream=tf.compat.v1.logging.error)
        with tf.control_dependencies([message]):
            return tf.constant(True)

    return tf.cond(count > 0, report, lambda: tf.constant(False))
