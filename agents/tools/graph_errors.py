"""Say in one line why a TensorFlow operation failed, and whether an environment failed."""

# Types of the operations through which the in-graph environments call Python.
_ENVIRONMENT_OP_TYPES = ('PyFunc', 'EagerPyFunc')


def summarize(error):
    """One line naming the error: its type and the first line of its cause.

    TensorFlow's messages of failed operations start with where the graph
    defined the node and end with stack traces; the cause is the line after
    `Node: '...'`. For an exception in Python code that an environment
    operation called, that line names the exception, such as
    'WorkerDiedError: worker 2 died', and is the whole summary.

    Args:
      error: Exception, usually a `tf.errors.OpError`.

    Returns:
      String without newlines.
    """
    lines = [line.strip() for line in getattr(error, 'message', str(error)).splitlines()]
    lines = [line for line in lines if line] or ['no message']
    cause = lines[0]
    for line, next_line in zip(lines, lines[1:]):
        if line.startswith('Node:'):
            cause = next_line
            break
    return cause if is_environment_error(error) else f'{type(error).__name__}: {cause}'


def is_environment_error(error):
    """Whether a `tf.errors.OpError` comes from Python code stepping or resetting environments."""
    return getattr(error, 'op', None) is not None and error.op.type in _ENVIRONMENT_OP_TYPES
