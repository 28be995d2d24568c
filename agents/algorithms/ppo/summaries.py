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


def means_over_computed_steps(metrics):
    """Each update metric's mean over the update steps that computed it.

    Once `kl_stop` has ended an update, its remaining steps report zeros
    without computing anything. `kl_stopped` itself is the fraction of all
    steps whose gradients were not applied: the one that crossed the bound
    and those after it.

    Args:
      metrics: Dict of `[steps]` tensors, one value per update step.

    Returns:
      Dict of scalar tensors with the same keys.
    """
    computed = _computed_steps(metrics)
    if computed is None:
        return {name: tf.reduce_mean(value) for name, value in metrics.items()}
    count = tf.maximum(tf.reduce_sum(computed), 1.0)
    means = {name: tf.reduce_sum(value * computed) / count for name, value in metrics.items()}
    means['kl_stopped'] = tf.reduce_mean(metrics['kl_stopped'])
    return means


def report_skipped_updates(metrics):
    """Print how many update steps were skipped and why, if any; an op to run after them.

    A step is skipped when its loss or gradients are not finite. The message
    lists the gradient norms of the steps that computed one.

    Args:
      metrics: Dict of `[steps]` tensors with `skipped_updates` and
        `gradient_norm`, and `kl_stopped` when a KL stop may end updates.

    Returns:
      Boolean scalar tensor, whether a message was printed.
    """
    skipped = metrics['skipped_updates']
    count = tf.reduce_sum(skipped)

    def report():
        gradient_norm = metrics['gradient_norm']
        computed = _computed_steps(metrics)
        if computed is not None:
            gradient_norm = tf.boolean_mask(gradient_norm, computed > 0)
        message = tf.print(
            'PPO skipped', tf.cast(count, tf.int32), 'of', tf.size(gradient_norm),
            'update steps: the loss or gradients were not finite (gradient norms',
            gradient_norm, '). Check the rewards and observations for extreme '
            'values.', output_stream=tf.compat.v1.logging.error)
        with tf.control_dependencies([message]):
            return tf.constant(True)

    return tf.cond(count > 0, report, lambda: tf.constant(False))


def _computed_steps(metrics):
    """1 for each update step that computed its loss, else 0; None without a KL stop.

    A KL stop stays set for the rest of its update, so the steps that
    computed are those up to and including the first stopped one.
    """
    if 'kl_stopped' not in metrics:
        return None
    return tf.cast(tf.cumsum(metrics['kl_stopped']) <= 1.0, tf.float32)
