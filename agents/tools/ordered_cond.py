"""A conditional whose branches run after the control dependencies in effect."""

import tensorflow as tf


def ordered_cond(pred, true_fn, false_fn):
    """Like `tf.cond`, but the branches also wait for the enclosing control dependencies.

    TensorFlow executes a `tf.cond` by lowering it into switch operations on the
    predicate. The tensors a branch captures from outside pass through switches
    that wait for the predicate and the captured tensor, but not for the control
    dependencies of the conditional itself, so a branch could read a variable
    before an update it was meant to follow. Passing the predicate through an
    identity operation created under the current control dependencies makes
    every switch, and so the whole branch, wait for them.

    Args:
      pred: Boolean scalar tensor.
      true_fn: Callable building the branch taken when `pred` is true.
      false_fn: Callable building the other branch.

    Returns:
      The outputs of the branch taken.
    """
    return tf.cond(tf.identity(pred), true_fn, false_fn)
