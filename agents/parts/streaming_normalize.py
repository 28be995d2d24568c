"""Normalization by a running mean and variance kept inside the graph."""

import tensorflow as tf

from agents.tools.batch_shape import as_batch


class StreamingNormalize:
    """Centres and scales values by statistics of all values seen so far.

    The count, mean and sum of squared deviations live in non-trainable
    variables and are updated with Chan et al.'s parallel algorithm, which
    merges a whole batch into the statistics at once and is exact for any
    batch size. Until two values have been seen there is no variance, and
    values are only centred, not scaled.
    """

    def __init__(self, template, center=True, scale=True, clip=10, name='normalize'):
        """Creates the variables holding the statistics.

        Args:
          template: Tensor with the shape of a single value, without batch
            dimension.
          center: Whether `transform` subtracts the mean.
          scale: Whether `transform` divides by the standard deviation.
          clip: If positive, `transform` clips its result to [-clip, clip].
          name: Name scope of the variables and operations.

        Raises:
          ValueError: If the template shape is not fully known.
        """
        template = tf.convert_to_tensor(template)
        if not template.shape.is_fully_defined():
            raise ValueError(
                f'StreamingNormalize template shape must be fully known; got {template.shape}.')
        self._shape = template.shape
        self._center = center
        self._scale = scale
        self._clip = clip
        self._name = name
        with tf.name_scope(name):
            self._count = tf.Variable(
                lambda: tf.constant(0, tf.int32), trainable=False, name='count')
            self._mean = tf.Variable(
                lambda: tf.zeros(self._shape, tf.float32), trainable=False, name='mean')
            self._squared_deviations = tf.Variable(
                lambda: tf.zeros(self._shape, tf.float32), trainable=False,
                name='squared_deviations')

    def transform(self, value):
        """Normalizes a batch of values, or a single value, by the statistics.

        Args:
          value: Tensor of shape [batch, *template shape] or of the template
            shape.

        Returns:
          Float32 tensor of the same shape, centred, scaled and clipped as
          configured; it fails at run time if the result is not finite.
        """
        with tf.name_scope(f'{self._name}/transform'):
            value = tf.cast(value, tf.float32)
            if self._center:
                value -= self._mean
            if self._scale:
                value /= tf.where(self._count > 1, self._std(), 1.0)
            if self._clip:
                value = tf.clip_by_value(value, -self._clip, self._clip)
            return tf.debugging.check_numerics(value, 'StreamingNormalize.transform')

    def update(self, value):
        """Merges a batch of values, or a single value, into the statistics.

        Args:
          value: Tensor of shape [batch, *template shape] or of the template
            shape.

        Returns:
          Summary string tensor of the batch's mean value, which also serves as
          the update operation.

        Raises:
          ValueError: If the value's shape does not fit the template.
        """
        with tf.name_scope(f'{self._name}/update'):
            value = as_batch(tf.cast(value, tf.float32), self._shape, 'StreamingNormalize')
            old_count = tf.cast(self._count, tf.float32)
            batch_count = tf.cast(tf.shape(value)[0], tf.float32)
            new_count = tf.maximum(old_count + batch_count, 1.0)
            batch_mean = tf.reduce_mean(value, 0)
            batch_squared_deviations = tf.reduce_sum(tf.square(value - batch_mean), 0)
            delta = batch_mean - self._mean
            new_mean = self._mean + delta * batch_count / new_count
            new_squared_deviations = (
                self._squared_deviations + batch_squared_deviations +
                tf.square(delta) * old_count * batch_count / new_count)
            # An empty batch has a NaN mean; it leaves the statistics unchanged.
            is_empty = tf.equal(batch_count, 0.0)
            new_mean = tf.where(is_empty, self._mean, new_mean)
            new_squared_deviations = tf.where(
                is_empty, self._squared_deviations, new_squared_deviations)
            with tf.control_dependencies([new_mean, new_squared_deviations]):
                update = tf.group(
                    self._mean.assign(new_mean),
                    self._squared_deviations.assign(new_squared_deviations),
                    self._count.assign_add(tf.shape(value)[0]))
            with tf.control_dependencies([update]):
                summary = tf.compat.v1.summary.scalar('value', tf.reduce_mean(batch_mean))
                return tf.where(is_empty, '', summary)

    def summary(self):
        """Returns a summary string tensor of the mean and standard deviation.

        Scalar statistics are logged as scalars and others as histograms; the
        mean is logged once a value was seen, the deviation once two were.
        """
        # Summaries are selected with tf.where rather than built in tf.cond
        # branches, whose graphs would drop the name scope from the tags.
        with tf.name_scope(f'{self._name}/summary'):
            mean_summary = tf.where(self._count > 0, self._summary('mean', self._mean), '')
            std_summary = tf.where(self._count > 1, self._summary('stddev', self._std()), '')
            return tf.compat.v1.summary.merge([mean_summary, std_summary])

    def _std(self):
        # Finite even before two values were seen, so summaries can be built;
        # callers only use it once they have.
        variance = self._squared_deviations / tf.cast(tf.maximum(self._count - 1, 1), tf.float32)
        # Rounding can make the variance slightly negative, and features that
        # barely vary should not be blown up; the epsilon guards both.
        return tf.sqrt(tf.maximum(variance, 0.0) + 1e-4)

    def _summary(self, name, tensor):
        if tensor.shape.rank == 0:
            return tf.compat.v1.summary.scalar(name, tensor)
        return tf.compat.v1.summary.histogram(name, tensor)
