"""One float vector per observation, from an observation of any Gymnasium space the graph holds.

Environments hand the graph their observations as they are: floats for a Box,
integer indices for Discrete and MultiDiscrete spaces, 0/1 flags for
MultiBinary ones, and nests of these for Tuple and Dict spaces
(`tools.in_graph_env.leaf_spaces`). Networks need one float vector per step.
`ObservationEncoder` makes it, at the network's input:

- a Box part is flattened;
- a Discrete part becomes a one-hot vector of its `n` classes, counted from
  its `start`;
- a MultiDiscrete part becomes one one-hot vector per entry (each of its own
  `nvec` classes, from its own `start`), concatenated;
- a MultiBinary part becomes its 0/1 entries as floats;
- the parts of a Tuple come in their order and those of a Dict in the sorted
  order of their keys (as `tools.nested` visits them), concatenated.

A lone Box space passes through unchanged: the networks flatten it themselves.
"""

import math

import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents.tools import nested
from agents.tools.spaces import leaf_spaces


class ObservationEncoder:
    """Encodes observations of one space into float vectors.

    Args:
      space: The observation space, as the in-graph environment holds it.

    Raises:
      ValueError: If a part of the space is not Box, Discrete, MultiDiscrete or
        MultiBinary.
    """

    def __init__(self, space):
        self._structure = leaf_spaces(space)
        for part in nested.flatten(self._structure):
            if not isinstance(part, (gym.spaces.Box, gym.spaces.Discrete,
                                     gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
                raise ValueError(f'Cannot encode observations of the space {part}.')
        self._passes_through = isinstance(self._structure, gym.spaces.Box)

    @property
    def size(self):
        """Number of floats of one encoded observation."""
        return sum(_encoded_size(part) for part in nested.flatten(self._structure))

    def __call__(self, observ):
        """Encode a batch of observations.

        Args:
          observ: Nest of tensors matching the space, each `[..., *part shape]`
            with the same leading (batch and time) axes.

        Returns:
          Float32 tensor `[..., size]`; for a lone Box space, `observ` itself.
        """
        if self._passes_through:
            return observ
        with tf.name_scope('encode_observ'):
            parts = nested.flatten(self._structure)
            encoded = [
                _encode(part_space, tensor)
                for part_space, tensor in zip(parts, nested.flatten_up_to(self._structure, observ))]
            return tf.concat(encoded, -1) if len(encoded) > 1 else encoded[0]


def _encoded_size(space):
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    return math.prod(space.shape)


def _encode(space, tensor):
    """One part `[..., *shape]` as floats `[..., encoded size]`."""
    if isinstance(space, gym.spaces.Discrete):
        return tf.one_hot(tf.cast(tensor, tf.int32) - int(space.start), int(space.n))
    shape = space.nvec.shape if isinstance(space, gym.spaces.MultiDiscrete) else space.shape
    leading = tf.shape(tensor)[:tensor.shape.rank - len(shape)]
    flat = tf.reshape(tensor, tf.concat([leading, [math.prod(shape)]], 0))
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec, start = space.nvec.reshape(-1), space.start.reshape(-1)
        width = int(nvec.max())
        one_hot = tf.one_hot(tf.cast(flat, tf.int32) - start.astype(np.int32), width)
        one_hot = tf.reshape(one_hot, tf.concat([leading, [len(nvec) * width]], 0))
        if np.all(nvec == width):
            return one_hot
        columns = [entry * width + value for entry, size in enumerate(nvec)
                   for value in range(size)]
        return tf.gather(one_hot, columns, axis=-1)
    return tf.cast(flat, tf.float32)
