"""The info dicts of a batch's environments as shared-memory columns, one per key.

Many tasks, the MuJoCo ones among them, return an info dict of a few scalars at
every step, with the same keys each time. Sent from a worker process to the
parent, such dicts cost a pickle and an unpickle per step, which measured a
fifth of a batch step of HalfCheetah (benchmarks/results/env_throughput/env_throughput.md).
Where the infos of a step share one schema (the same keys, in the same order,
with values of the same scalar types), the worker writes each value into the
shared array of its key, in the row of its environment, and the parent builds
the dicts from the arrays: nothing is pickled and no pipe is used.

Values keep their exact type: a NumPy scalar comes back as a scalar of the same
NumPy type, a Python float, int or bool as a Python object of that type.
"""

import numpy as np

from agents.tools.envs import shared_arrays

# NumPy scalar types, each with the Python type that holds its values exactly.
NUMPY_SCALARS = {
    np.float16: float, np.float32: float, np.float64: float, np.bool_: bool,
    np.int8: int, np.int16: int, np.int32: int, np.int64: int,
    np.uint8: int, np.uint16: int, np.uint32: int, np.uint64: int}
# Types whose values a column holds exactly: NumPy scalars in an array of their
# own dtype; Python floats as float64, ints as int64 (a larger int does not
# fit, and its info is not written) and bools as bool.
_SCALAR_TYPES = frozenset([float, int, bool, *NUMPY_SCALARS])


def schema_of(infos):
    """The schema all the info dicts share, if columns can hold them.

    Args:
      infos: Iterable of info dicts.

    Returns:
      Tuple of (key, value type) pairs in the dicts' order, or None if there
      are no dicts or they are empty, differ in keys, order or types, or hold
      values other than the scalars of `_SCALAR_TYPES`.
    """
    schema = None
    for info in infos:
        info_schema = tuple((key, type(value)) for key, value in info.items())
        if schema is None:
            schema = info_schema
        if info_schema != schema:
            return None
    if not schema or any(value_type not in _SCALAR_TYPES for _, value_type in schema):
        return None
    return schema


class InfoColumns:
    """One shared array per key of a schema, with a row for each environment of a batch.

    The parent creates the columns; each worker attaches to them by name and
    writes the infos of the environments it steps, which the parent then reads.
    """

    def __init__(self, schema, size, name=None):
        """Create the columns or attach to existing ones.

        Args:
          schema: Tuple of (key, value type) pairs, as `schema_of` returns.
          size: Number of environments in the batch.
          name: Name of the shared memory of existing columns; None creates new
            ones, owned (and later unlinked) by this object.
        """
        self.schema = schema
        self.size = size
        self._keys = tuple(key for key, _ in schema)
        self._types = tuple(value_type for _, value_type in schema)
        self._shared = shared_arrays.SharedArrays(
            {str(index): ((size,), value_type) for index, value_type in enumerate(self._types)},
            name=name)
        self._columns = [self._shared[str(index)] for index in range(len(schema))]
        # Columns of Python types give Python objects back through `tolist`.
        self._as_python = [not issubclass(value_type, np.generic) for value_type in self._types]

    @property
    def name(self):
        """Name under which a worker attaches to the columns."""
        return self._shared.name

    def write(self, rows, infos):
        """Write the info dicts of the environments at `rows`, if they all fit the schema.

        Args:
          rows: A slice or a list of the environments' batch indices, one per info.
          infos: Their info dicts, in the same order.

        Returns:
          Whether every info fitted and was written. After False, some columns
          may have been written; the caller sends the infos another way.
        """
        infos = list(infos)
        # One flat list of every key and one of every value's type, compared at
        # once, cost less than a comparison per info.
        if [key for info in infos for key in info] != list(self._keys) * len(infos):
            return False
        values = [value for info in infos for value in info.values()]
        if list(map(type, values)) != list(self._types) * len(infos):
            return False
        width = len(self._columns)
        try:
            for index, column in enumerate(self._columns):
                column[rows] = values[index::width]
        except OverflowError:  # A Python int beyond int64.
            return False
        return True

    def read(self, rows):
        """The info dicts of the environments at `rows`, a slice or a list of batch indices."""
        values = [
            column[rows].tolist() if as_python else column[rows]
            for column, as_python in zip(self._columns, self._as_python)]
        keys = self._keys
        return [dict(zip(keys, row_values)) for row_values in zip(*values)]

    def close(self):
        """Let go of the shared memory; the creating object also removes it."""
        self._shared.close()
