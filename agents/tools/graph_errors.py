"""Say in one line why a TensorFlow operation failed, and whether an environment failed."""

import re

# Types of the operations through which the in-graph environments call Python.
_ENVIRONMENT_OP_TYPES = ('PyFunc', 'EagerPyFunc')

# Names of those operations (see `InGraphEnv`), for errors of operations inside
# a loop of the graph, which name the failed node but carry no operation.
_ENVIRONMENT_OP_NAME = re.compile(r'(^|/)environment/(simulate|reset)(_\d+)?/(step|reset)(_\d+)?$')


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
        if line == 'Graph execution error:':  # Inside a loop of the graph, no node is named.
            cause = next_line
    return cause if is_environment_error(error) else f'{type(error).__name__}: {cause}'


def is_environment_error(error):
    """Whether a `tf.errors.OpError` comes from Python code stepping or resetting environments."""
    if getattr(error, 'op', None) is not None:
        return error.op.type in _ENVIRONMENT_OP_TYPES
    nodes = re.findall(r'\{\{node ([^}]+)\}\}', getattr(error, 'message', ''))
    return bool(nodes) and bool(_ENVIRONMENT_OP_NAME.search(nodes[-1]))
