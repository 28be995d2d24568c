"""The Gymnasium spaces the graph can hold, and their parts; free of TensorFlow.

Observations may be Box, Discrete, MultiDiscrete and MultiBinary spaces, and
Tuple and Dict spaces of these; actions one of the four. The configuration
check and the environment workers use this module without loading TensorFlow.
"""

import gymnasium as gym

from agents.tools import nested

# Spaces whose values are integer indices or flags, held as int32 in the graph.
INTEGER_SPACES = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
# Spaces whose values the graph holds in tensors of a fixed shape and dtype.
LEAF_SPACES = (gym.spaces.Box,) + INTEGER_SPACES


def leaf_spaces(space):
    """The space as a nest of its parts: a Tuple as a tuple, a Dict as a dict, others alone.

    The leaves of the nest are Box, Discrete, MultiDiscrete or MultiBinary
    spaces, or spaces the graph cannot hold (see `check_space`). `nested`
    visits a dict's keys in sorted order, so the parts of a Dict come in the
    order of their keys.
    """
    if isinstance(space, gym.spaces.Tuple):
        return tuple(leaf_spaces(part) for part in space.spaces)
    if isinstance(space, gym.spaces.Dict):
        return {key: leaf_spaces(part) for key, part in space.spaces.items()}
    return space


def space_shape(space):
    """Shape of one value of a Box, Discrete, MultiDiscrete or MultiBinary space."""
    if isinstance(space, gym.spaces.Discrete):
        return ()
    if isinstance(space, gym.spaces.MultiDiscrete):
        return tuple(space.nvec.shape)
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        return tuple(space.shape)
    raise unsupported_space(space)


def check_space(space, kind):
    """Raise a one-line error naming the space if the graph cannot hold it.

    Observations may be Box, Discrete, MultiDiscrete and MultiBinary spaces, and
    Tuple and Dict spaces of these; actions one of the four.

    Args:
      space: The environment's space.
      kind: 'observation' or 'action'.

    Raises:
      NotImplementedError: If the graph cannot hold the space.
    """
    parts = nested.flatten(leaf_spaces(space)) if kind == 'observation' else [space]
    for part in parts:
        if not isinstance(part, LEAF_SPACES):
            raise unsupported_space(part, kind, space)


def unsupported_space(space, kind='value', whole=None):
    """The one-line error for a space the graph cannot hold, naming it and what it takes."""
    where = '' if whole is None or whole is space else f' (part of {whole})'
    nests = ' and Tuple and Dict spaces of these' if kind == 'observation' else ''
    return NotImplementedError(
        f'Cannot train on the {kind} space {space}{where}: in-graph environments take Box, '
        f'Discrete, MultiDiscrete and MultiBinary {kind} spaces{nests}.')
