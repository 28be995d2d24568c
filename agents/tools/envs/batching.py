"""How the observations and actions of several environments form one batch.

A batch holds one array per leaf of the space, with the environments along the
first axis, as Gymnasium's vector environments batch them: a Box of shape S
becomes an array [B, *S] of the space's dtype; a Discrete, MultiDiscrete or
MultiBinary space likewise; a Dict space a dict of batches in the space's key
order; a Tuple space a tuple of batches. Values of spaces without a fixed shape
and dtype (Graph, Sequence, Text, OneOf and spaces of your own) are held in an
object array [B], one value per environment; Gymnasium's vector environments
hold them in tuples (`as_tuples`). Only backends that pass values between
processes one by one take those spaces: shared memory needs fixed shapes.
"""

import gymnasium
import numpy as np

from agents.tools import nested

# Spaces whose values have a fixed shape and dtype, batched into arrays.
_FIXED_SPACES = (
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
      fixed_size: Whether every leaf has a fixed shape and dtype, so that
        batches are arrays of numbers and fit in shared memory.
    """

    def __init__(self, space, kind):
        """Find the leaves of a space.

        Args:
          space: A Gymnasium space; Dict and Tuple spaces may nest.
          kind: 'observation' or 'action', for error messages.

        Raises:
          TypeError: If the space is not a Gymnasium space.
        """
        self.space = space
        self._kind = kind
        self.structure = self._structure(space)
        self.leaves = nested.flatten(self.structure)
        self.nested = isinstance(space, (gymnasium.spaces.Dict, gymnasium.spaces.Tuple))
        self._fixed = tuple(isinstance(leaf, _FIXED_SPACES) for leaf in self.leaves)
        self.fixed_size = all(self._fixed)

    def describe_variable_leaves(self):
        """Which values have no fixed shape and dtype, for messages."""
        if not self.nested:
            return 'its values have'
        return 'the values of ' + ', '.join(
            str(leaf) for leaf, fixed in zip(self.leaves, self._fixed) if not fixed) + ' have'

    def empty(self, size):
        """A batch of `size` zero values (None for values without a fixed shape)."""
        return self.unflatten([
            np.zeros((size,) + space.shape, space.dtype) if fixed
            else np.full(size, None, object)
            for space, fixed in zip(self.leaves, self._fixed)])

    def stack(self, values):
        """The batch of a list of values, one per environment.

        Raises:
          ValueError: If a value does not fit the space's structure or shapes.
        """
        try:
            return self.unflatten([
                self._stack_leaf(space, fixed, column) for space, fixed, column in zip(
                    self.leaves, self._fixed, self.flatten_rows(values))])
        except (ValueError, TypeError) as error:
            raise ValueError(
                f'The environments returned {self._kind}s that do not fit the {self._kind} '
                f'space {self.space}: {error}') from None

    def check(self, batch, size):
        """Return the batch as arrays after checking its structure, size and shapes.

        Args:
          batch: A batch of values as `stack` returns, or one that converts to it
            (a nested list, an array of another dtype, a tuple of values for a
            space without a fixed shape).
          size: Number of environments the batch must hold.

        Raises:
          ValueError: If the batch size, the structure or a shape is wrong, or an
            integer Box space gets floats that are not finite.
          NotABatchError: If a leaf of the batch is a scalar.
          TypeError: If an integer space other than Box gets floats (a Box
            space takes them, converted to its dtype toward zero, as policies
            for Box spaces emit floats).
        """
        if not self.nested:
            return self._check_leaf(self.space, self._fixed[0], batch, size)
        try:
            leaves = nested.flatten_up_to(self.structure, batch)
        except ValueError as error:
            raise ValueError(
                f'The {self._kind}s must be nested like the {self._kind} space {self.space}: '
                f'{error}') from None
        return self.unflatten([
            self._check_leaf(space, fixed, leaf, size)
            for space, fixed, leaf in zip(self.leaves, self._fixed, leaves)])

    def rows(self, batch):
        """List of the values of each environment in a checked batch."""
        if not self.nested:
            return list(batch)
        leaves = self.flatten(batch)
        return [self.unflatten([leaf[index] for leaf in leaves])
                for index in range(len(leaves[0]))]

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
        return self.unflatten([
            leaf[index].copy() if fixed else leaf[index]
            for leaf, fixed in zip(self.flatten(batch), self._fixed)])

    def as_tuples(self, batch):
        """The batch as Gymnasium's vector environments return it.

        Values of spaces without a fixed shape come in a tuple, one per
        environment, as `gymnasium.vector.utils.concatenate` batches them.
        """
        if self.fixed_size:
            return batch
        return self.unflatten([
            leaf if fixed else tuple(leaf)
            for leaf, fixed in zip(self.flatten(batch), self._fixed)])

    def flatten_rows(self, values):
        """Tuple of one list per leaf, of that leaf of each of a list of values."""
        if not self.nested:
            return (list(values),)
        columns = tuple([] for _ in self.leaves)
        for value in values:
            for column, leaf in zip(columns, self.flatten(value)):
                column.append(leaf)
        return columns

    def flatten(self, value):
        """Tuple of the leaves of one value or batch, in the order of `leaves`."""
        return nested.flatten_up_to(self.structure, value) if self.nested else (value,)

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
        if isinstance(space, gymnasium.spaces.Space):
            return space
        raise TypeError(
            f'The {self._kind} space must be a gymnasium.spaces.Space, got {space!r}.')

    def _stack_leaf(self, space, fixed, values):
        if not fixed:
            return _objects(values)
        return np.stack(values, out=np.empty((len(values),) + space.shape, space.dtype)) if (
            values) else np.zeros((0,) + space.shape, space.dtype)

    def _check_leaf(self, space, fixed, values, size):
        if not fixed:
            if isinstance(values, (str, bytes)) or not hasattr(values, '__len__'):
                raise ValueError(
                    f'Expected one {self._kind} per environment ({size}), in a tuple for the '
                    f'{self._kind} space {space}; got {type(values).__name__}.')
            if len(values) != size:
                raise ValueError(
                    f'Expected one {self._kind} per environment ({size}), got a batch of '
                    f'{len(values)}.')
            return _objects(values)
        values = np.asarray(values)
        if values.shape == (size,) + space.shape and values.dtype == space.dtype:
            return values  # The common case, checked first to keep stepping fast.
        if values.ndim == 0:
            raise NotABatchError(
                f'Expected one {self._kind} per environment ({size}), got a scalar.')
        if len(values) != size:
            raise ValueError(
                f'Expected one {self._kind} per environment ({size}), got a batch of '
                f'{len(values)}.')
        if values.shape[1:] != space.shape:
            raise ValueError(
                f'Each {self._kind} must have shape {space.shape} to match the {self._kind} '
                f'space {space}; got shape {values.shape[1:]} (batch shape {values.shape}).')
        if space.dtype.kind in 'iu' and values.dtype.kind not in 'biu':
            if not (isinstance(space, gymnasium.spaces.Box) and values.dtype.kind == 'f'):
                raise TypeError(
                    f'The {self._kind} space {space} needs integer {self._kind}s; got '
                    f'{values.dtype}.')
            if not np.isfinite(values).all():
                raise ValueError(
                    f'The {self._kind}s for the integer space {space} must be finite; got '
                    f'{values}.')
            # As policies for Box spaces emit floats: NumPy's conversion, toward zero.
            values = values.astype(space.dtype)
        return values


class NotABatchError(ValueError, TypeError):
    """A scalar where a batch with one value per environment belongs.

    Both a ValueError, as every wrong batch, and the TypeError that Gymnasium's
    vector environments raise when they iterate over a scalar.
    """


def _objects(values):
    """A one-dimensional object array holding the values, which may be sequences themselves."""
    array = np.empty(len(values), object)
    for index, value in enumerate(values):
        array[index] = value
    return array
