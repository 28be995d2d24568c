"""How the observations and actions of several environments form one batch.

A batch holds one array per leaf of the space, with the environments along the
first axis, as Gymnasium's vector environments batch them: a Box of shape S
becomes an array [B, *S] of the space's dtype; a Discrete, MultiDiscrete or
MultiBinary space likewise; a Dict space a dict of batches in the space's key
order; a Tuple space a tuple of batches. Leaves need a fixed shape and dtype,
so Text, Graph and Sequence spaces cannot be batched.
"""

import gymnasium
import numpy as np

from agents.tools import nested

_LEAF_SPACES = (
    gymnasium.spaces.Box, gymnasium.spaces.Discrete, gymnasium.spaces.MultiDiscrete,
    gymnasium.spaces.MultiBinary)


class BatchLayout:
    """The batch layout of one space: its leaves and how values map onto them.

    Attributes:
      space: The space of one environment's value.
      structure: The leaf spaces nested in dicts and tuples as the space nests
        them; the space itself when it is a leaf.
      leaves: Tuple of the leaf spaces in `nested.flatten` order.
      nested: Whether the space is a Dict or Tuple.
    """

    def __init__(self, space, kind):
        """Find the leaves of a space.

        Args:
          space: A Gymnasium space; Dict and Tuple spaces may nest.
          kind: 'observation' or 'action', for error messages.

        Raises:
          TypeError: If a leaf of the space has no fixed shape and dtype.
        """
        self.space = space
        self._kind = kind
        self.structure = self._structure(space)
        self.leaves = nested.flatten(self.structure)
        self.nested = isinstance(space, (gymnasium.spaces.Dict, gymnasium.spaces.Tuple))

    def empty(self, size):
        """A batch of `size` zero values."""
        if not self.nested:
            return np.zeros((size,) + self.space.shape, self.space.dtype)
        return nested.map(
            lambda space: np.zeros((size,) + space.shape, space.dtype), self.structure)

    def stack(self, values):
        """The batch of a list of values, one per environment.

        Raises:
          ValueError: If a value does not fit the space's structure or shapes.
        """
        if not values:
            return self.empty(0)
        try:
            return nested.map(self._stack_leaf, self.structure, *values)
        except (ValueError, TypeError) as error:
            raise ValueError(
                f'The environments returned {self._kind}s that do not fit the {self._kind} '
                f'space {self.space}: {error}') from None

    def check(self, batch, size):
        """Return the batch as arrays after checking its structure, size and shapes.

        Args:
          batch: A batch of values as `stack` returns, or one that converts to it
            (a nested list, an array of another dtype).
          size: Number of environments the batch must hold.

        Raises:
          ValueError: If the batch size, the structure or a shape is wrong.
          TypeError: If an integer space gets non-integer values.
        """
        if not self.nested:
            return self._check_leaf(self.space, batch, size)
        try:
            return nested.map(
                lambda space, leaf: self._check_leaf(space, leaf, size), self.structure, batch)
        except ValueError as error:
            if 'Nested structures differ' not in str(error):
                raise
            raise ValueError(
                f'The {self._kind}s must be nested like the {self._kind} space {self.space}: '
                f'{error}') from None

    def rows(self, batch):
        """List of the values of each environment in a checked batch."""
        if not self.nested:
            return list(batch)
        size = len(nested.flatten(batch)[0])
        return [nested.map(lambda leaf, index=index: leaf[index], batch) for index in range(size)]

    def select(self, batch, rows):
        """The batch of the values at `rows` (an index array) of a checked batch."""
        return self.unflatten([leaf[rows] for leaf in self.flatten(batch)])

    def assign(self, batch, rows, values):
        """Write a batch of values into `rows` of a batch, in place."""
        for leaf, value in zip(self.flatten(batch), self.flatten(values)):
            leaf[rows] = value

    def copy(self, batch):
        """A copy of a batch."""
        return self.unflatten([leaf.copy() for leaf in self.flatten(batch)])

    def row(self, batch, index):
        """A copy of the value of environment `index` in a batch."""
        return self.unflatten([leaf[index].copy() for leaf in self.flatten(batch)])

    def flatten_rows(self, values):
        """Tuple of one list per leaf, of that leaf of each of a list of values."""
        if not self.nested:
            return (values,)
        columns = tuple([] for _ in self.leaves)
        for value in values:
            for column, leaf in zip(columns, nested.flatten(value)):
                column.append(leaf)
        return columns

    def flatten(self, value):
        """Tuple of the leaves of one value or batch, in the order of `leaves`."""
        return nested.flatten(value) if self.nested else (value,)

    def unflatten(self, leaves):
        """The value or batch whose leaves, in the order of `leaves`, are given."""
        if not self.nested:
            return leaves[0]
        remaining = iter(leaves)
        return nested.map(lambda _: next(remaining), self.structure)

    def _structure(self, space):
        if isinstance(space, gymnasium.spaces.Dict):
            return {key: self._structure(inner) for key, inner in space.spaces.items()}
        if isinstance(space, gymnasium.spaces.Tuple):
            return tuple(self._structure(inner) for inner in space.spaces)
        if isinstance(space, _LEAF_SPACES):
            return space
        raise TypeError(
            f'Cannot batch the {self._kind} space {space}: batch environments support Box, '
            f'Discrete, MultiDiscrete and MultiBinary spaces, nested in Dict and Tuple spaces.')

    def _stack_leaf(self, space, *values):
        return np.stack(values, out=np.empty((len(values),) + space.shape, space.dtype))

    def _check_leaf(self, space, values, size):
        values = np.asarray(values)
        if values.shape == (size,) + space.shape and values.dtype == space.dtype:
            return values  # The common case, checked first to keep stepping fast.
        if values.ndim == 0 or len(values) != size:
            got = 'a scalar' if values.ndim == 0 else f'a batch of {len(values)}'
            raise ValueError(
                f'Expected one {self._kind} per environment ({size}), got {got}.')
        if values.shape[1:] != space.shape:
            raise ValueError(
                f'Each {self._kind} must have shape {space.shape} to match the {self._kind} '
                f'space {space}; got shape {values.shape[1:]} (batch shape {values.shape}).')
        if space.dtype.kind in 'iu' and values.dtype.kind not in 'biu':
            raise TypeError(
                f'The {self._kind} space {space} needs integer {self._kind}s; got '
                f'{values.dtype}.')
        return values
