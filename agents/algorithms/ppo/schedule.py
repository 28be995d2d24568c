"""The learning rate over training: constant, or decaying linearly.

A schedule maps the training step, the environment steps the agent has
trained on, to a value. 'constant' keeps the initial value; 'linear' moves it
in a straight line to a final value at the run's budget of steps, and holds it
there past the budget (a resumed run that trains longer).
"""

import tensorflow as tf


def scheduled(name, initial, kind, final, step, steps):
    """The value of a schedule at a training step, as a scalar tensor.

    Args:
      name: Name scope of the value, as TensorBoard shows its ops.
      initial: Value at step zero.
      kind: 'constant' or 'linear'.
      final: Value the linear schedule reaches at `steps`; zero if None.
      step: Integer scalar tensor, the current training step.
      steps: Training steps of the run, where the linear schedule ends.

    Returns:
      Float32 scalar tensor.
    """
    with tf.name_scope(name):
        if kind == 'constant':
            return tf.constant(float(initial))
        if kind != 'linear':
            raise ValueError(f"Unknown schedule {kind!r}; use 'constant' or 'linear'.")
        final = float(final or 0.0)
        remaining = tf.maximum(1.0 - tf.cast(step, tf.float32) / float(steps), 0.0)
        return final + (float(initial) - final) * remaining
