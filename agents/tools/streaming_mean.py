"""A running mean computed inside the TensorFlow graph."""

import tensorflow as tf

from agents.tools.batch_shape import as_batch


class StreamingMean:
    """Mean of batches of values submitted over many `session.run` calls.

    The sum and count live in non-trainable variables, so the mean of, say,
    episode scores accumulates across training steps until `clear()` reads it
    and starts over. The mean of nothing is NaN; check `count` if that matters.
    """

    def __init__(self, shape, dtype, name='streaming_mean'):
        """Creates the variables holding the sum and the count.

        Args:
          shape: Shape of a single value.
          dtype: Floating point dtype of the values and the mean.
          name: Name scope of the variables.
        """
        self._shape = tf.TensorShape(shape)
        self._dtype = tf.as_dtype(dtype)
        self._name = name
        with tf.name_scope(name):
            self._sum = tf.Variable(
                lambda: tf.zeros(self._shape, self._dtype), trainable=False, name='sum')
            self._count = tf.Variable(
                lambda: tf.constant(0, tf.int32), trainable=False, name='count')

    @property
    def value(self):
        """Tensor of the current mean."""
        return self._sum / tf.cast(self._count, self._dtype)

    @property
    def count(self):
        """Int32 tensor of how many values were submitted since the last clear."""
        return self._count.read_value()

    def submit(self, value):
        """Adds a batch of values, or a single value, to the mean.

        Args:
          value: Tensor of shape [batch, *shape], or of `shape` for one value.

        Returns:
          Operation that adds the values.

        Raises:
          ValueError: If the value's shape does not fit the mean's shape.
        """
        with tf.name_scope(f'{self._name}/submit'):
            value = as_batch(
                tf.convert_to_tensor(value, self._dtype), self._shape, 'StreamingMean')
            # A batch of scalars counts one per element, without slicing its shape.
            count = tf.size(value) if self._shape.rank == 0 else tf.shape(value)[0]
            return tf.group(
                self._sum.assign_add(tf.reduce_sum(value, 0)),
                self._count.assign_add(count))

    def clear(self):
        """Returns the current mean and resets the sum and the count to zero.

        Returns:
          Tensor of the mean before the reset.
        """
        with tf.name_scope(f'{self._name}/clear'):
            mean = self.value
            with tf.control_dependencies([mean]):
                reset = tf.group(
                    self._sum.assign(tf.zeros_like(self._sum)),
                    self._count.assign(0))
            with tf.control_dependencies([reset]):
                return tf.identity(mean)
