"""Counting the trainable parameters of a model."""

import re

import numpy as np
import tensorflow as tf


def count_weights(scope=None, exclude=None, graph=None):
    """Counts the trainable parameters of a graph, or of one scope in it.

    Args:
      scope: Optional variable scope name; only variables inside it count.
      exclude: Optional regular expression; variables whose full name
        matches it from the start (as with `re.match`) do not count.
      graph: Graph to inspect; defaults to the current default graph.

    Returns:
      Number of scalar parameters, as a Python int.

    Raises:
      ValueError: If a counted variable's shape is not fully known.
    """
    graph = graph or tf.compat.v1.get_default_graph()
    variables = graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)
    if scope:
        prefix = scope if scope.endswith('/') else scope + '/'
        variables = [variable for variable in variables if variable.name.startswith(prefix)]
    if exclude:
        pattern = re.compile(exclude)
        variables = [variable for variable in variables if not pattern.match(variable.name)]
    total = 0
    for variable in variables:
        shape = variable.shape
        if not shape.is_fully_defined():
            raise ValueError(
                f'Cannot count the weights of {variable.name}: its shape {shape} is not '
                'fully known.')
        total += int(np.prod(shape.as_list(), dtype=np.int64))
    return total
