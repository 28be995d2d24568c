"""A conditional whose branches run after the control dependencies in effect."""

import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2


def ordered_cond(pred, true_fn, false_fn, as_function=False):
    """Like `tf.cond`, but the branches also wait for the enclosing control dependencies.

    TensorFlow executes a `tf.cond` by lowering it into switch operations on the
    predicate. The tensors a branch captures from outside pass through switches
    that wait for the predicate and the captured tensor, but not for the control
    dependencies of the conditional itself, so a branch could read a variable
    before an update it was meant to follow. Passing the predicate through an
    identity operation created under the current control dependencies makes
    every switch, and so the whole branch, wait for them.

    A lowered conditional runs a switch and an identity for every tensor its
    branches capture each time it runs, whichever branch is taken. A branch
    that trains a network captures every variable and optimizer slot: about a
    hundred operations of bookkeeping on every environment step, although it
    trains rarely. With `as_function`, the conditional instead stays one
    operation that calls the branch taken as a function; it waits for all its
    inputs, and so for the control dependencies as well.

    Args:
      pred: Boolean scalar tensor.
      true_fn: Callable building the branch taken when `pred` is true.
      false_fn: Callable building the other branch.
      as_function: Run the branch taken as a function call instead of lowering
        the conditional into the graph.

    Returns:
      The outputs of the branch taken.
    """
    outputs = tf.cond(tf.identity(pred), true_fn, false_fn)
    if as_function:
        conditional = tf.nest.flatten(outputs)[0].op
        while conditional.type not in ('If', 'StatelessIf'):  # Past cond's identities.
            conditional = conditional.inputs[0].op
        conditional._set_attr(  # pylint: disable=protected-access
            '_lower_using_switch_merge', attr_value_pb2.AttrValue(b=False))
    return outputs
