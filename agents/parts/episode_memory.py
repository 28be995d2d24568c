"""In-graph storage of whole episodes for a batch of rows."""

import itertools

import tensorflow as tf

from agents.tools import nested


class EpisodeMemory:
    """Stores up to `capacity` episodes of up to `max_length` steps in variables.

    Each row of the memory holds one episode. Transitions are appended step by
    step to the rows of the environments that produced them, and whole
    episodes can be copied in, read out, or cleared. Reading returns the full
    buffers padded to `max_length`, together with each row's length; the
    content past a row's length is stale and must be masked by the reader.

    The data is a nested structure shaped like `template`; every row index
    given must be distinct and below `capacity`.
    """

    def __init__(self, template, capacity, max_length, scope):
        """Creates the non-trainable variables of the memory.

        Args:
          template: Nested structure of tensors with the shape and dtype of a
            single step, without batch or time dimensions.
          capacity: Number of episodes (rows) the memory holds.
          max_length: Maximum number of steps per episode.
          scope: Variable scope name for the memory's variables.

        Raises:
          ValueError: If a template shape is not fully known.
        """
        self._capacity = capacity
        self._max_length = max_length
        for element in nested.flatten(template):
            if not element.shape.is_fully_defined():
                raise ValueError(
                    f'EpisodeMemory template shapes must be fully known; got {element!r}.')
        with tf.compat.v1.variable_scope(scope) as variable_scope:
            self._scope = variable_scope
            self._length = tf.Variable(
                lambda: tf.zeros([capacity], tf.int32), trainable=False, name='length')
            index = itertools.count()
            self._buffers = nested.map(
                lambda element: self._create_buffer(element, f'buffer_{next(index)}'), template)

    @property
    def capacity(self):
        """Number of episodes the memory holds."""
        return self._capacity

    @property
    def max_length(self):
        """Maximum number of steps per episode."""
        return self._max_length

    def length(self, rows=None):
        """Returns the number of steps stored in the given rows.

        Args:
          rows: Int32 vector of row indices; all rows if None.

        Returns:
          Int32 vector of lengths.
        """
        with tf.name_scope(f'{self._scope.name}/length'):
            return tf.gather(self._length, self._rows(rows))

    def append(self, transitions, rows=None):
        """Appends one step to the episode of each given row.

        Args:
          transitions: Nested structure like the template with a leading
            batch dimension of one step per row.
          rows: Int32 vector of row indices; all rows if None.

        Returns:
          Operation that appends the step and advances the lengths; it fails
          when a row is outside the capacity or already at `max_length`.
        """
        with tf.name_scope(f'{self._scope.name}/append'):
            rows = self._rows(rows)
            assert_capacity = self._assert_capacity(rows)
            with tf.control_dependencies([assert_capacity]):
                timestep = tf.gather(self._length, rows)
                assert_max_length = tf.compat.v1.assert_less(
                    timestep, self._max_length,
                    message=f'EpisodeMemory max_length {self._max_length} exceeded by append')
            with tf.control_dependencies([assert_max_length]):
                indices = tf.stack([rows, timestep], 1)
                writes = nested.map(
                    lambda buffer, value: buffer.scatter_nd_update(
                        indices, tf.convert_to_tensor(value, buffer.dtype)),
                    self._buffers, transitions, flatten=True)
            with tf.control_dependencies(writes):
                return self._length.scatter_add(tf.IndexedSlices(tf.ones_like(rows), rows))

    def replace(self, episodes, length, rows=None):
        """Overwrites the given rows with whole episodes.

        Args:
          episodes: Nested structure like the template with leading
            dimensions [len(rows), max_length].
          length: Int32 vector of the episodes' lengths.
          rows: Int32 vector of row indices; all rows if None.

        Returns:
          Operation that writes the episodes and their lengths; it fails when
          a row is outside the capacity or a length exceeds `max_length`.
        """
        with tf.name_scope(f'{self._scope.name}/replace'):
            rows = self._rows(rows)
            length = tf.convert_to_tensor(length, tf.int32)
            assert_capacity = self._assert_capacity(rows)
            with tf.control_dependencies([assert_capacity]):
                assert_max_length = tf.compat.v1.assert_less_equal(
                    length, self._max_length,
                    message=f'EpisodeMemory max_length {self._max_length} exceeded by replace')
            with tf.control_dependencies([assert_max_length]):
                writes = nested.map(
                    lambda buffer, value: buffer.scatter_update(tf.IndexedSlices(
                        tf.convert_to_tensor(value, buffer.dtype), rows)),
                    self._buffers, episodes, flatten=True)
            with tf.control_dependencies(writes):
                return self._length.scatter_update(tf.IndexedSlices(length, rows))

    def data(self, rows=None):
        """Returns the episodes stored in the given rows.

        Args:
          rows: Int32 vector of row indices; all rows if None.

        Returns:
          Tuple of the episodes, a nested structure like the template with
          leading dimensions [len(rows), max_length], and their lengths.
        """
        with tf.name_scope(f'{self._scope.name}/data'):
            rows = self._rows(rows)
            episodes = nested.map(lambda buffer: tf.gather(buffer, rows), self._buffers)
            return episodes, tf.gather(self._length, rows)

    def clear(self, rows=None):
        """Empties the given rows by setting their lengths to zero.

        Args:
          rows: Int32 vector of row indices; all rows if None.

        Returns:
          Operation that clears the rows.
        """
        with tf.name_scope(f'{self._scope.name}/clear'):
            rows = self._rows(rows)
            return self._length.scatter_update(tf.IndexedSlices(tf.zeros_like(rows), rows))

    def _create_buffer(self, element, name):
        shape = [self._capacity, self._max_length] + element.shape.as_list()
        return tf.Variable(
            lambda: tf.zeros(shape, element.dtype), trainable=False, name=name)

    def _rows(self, rows):
        if rows is None:
            return tf.range(self._capacity)
        rows = tf.convert_to_tensor(rows, tf.int32)
        if rows.shape.rank != 1:
            raise ValueError(f'EpisodeMemory rows must be a vector; got shape {rows.shape}.')
        return rows

    def _assert_capacity(self, rows):
        return tf.compat.v1.assert_less(
            rows, self._capacity,
            message=f'EpisodeMemory capacity {self._capacity} exceeded')
