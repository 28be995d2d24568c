"""Action distributions for policies, one per kind of Gymnasium action space.

`DiagonalGaussian` (Box), `Categorical` (Discrete), `FactoredCategorical`
(MultiDiscrete: one categorical per entry) and `Bernoulli` (MultiBinary: one
Bernoulli per entry). All take tensors with arbitrary leading batch dimensions
(for example `[batch, time]`) and treat the last axis as the event: the
Gaussian's action vector, the categorical's classes, the entries of the
factored ones (whose log probabilities, entropies and divergences are sums
over their entries). Every method returns one value per batch
element. A distribution is rebuilt from its `parameters`, so algorithms can
store a policy's parameters and compare the old policy with the new one later:
`type(policy)(**policy.parameters)`.
"""

import math

import tensorflow as tf


class DiagonalGaussian:
    """Normal distribution over vectors with independent dimensions.

    Args:
      mean: Float tensor `[..., size]` of means.
      log_std: Float tensor of log standard deviations, broadcastable to the
        shape of `mean` (for example a `[size]` vector shared by the batch).

    Raises:
      TypeError: If the parameters are not floating point of one dtype.
      ValueError: If the parameters have no event axis or cannot broadcast.
    """

    def __init__(self, mean, log_std):
        with tf.name_scope('diagonal_gaussian'):
            mean = tf.convert_to_tensor(mean)
            log_std = tf.convert_to_tensor(log_std, dtype_hint=mean.dtype)
            if not mean.dtype.is_floating or mean.dtype != log_std.dtype:
                raise TypeError(
                    'DiagonalGaussian needs mean and log_std of one floating dtype, '
                    f'got {mean.dtype.name} and {log_std.dtype.name}.')
            try:
                static_shape = tf.broadcast_static_shape(mean.shape, log_std.shape)
            except ValueError:
                raise ValueError(
                    f'DiagonalGaussian cannot broadcast mean of shape {mean.shape} '
                    f'with log_std of shape {log_std.shape}.') from None
            if static_shape.rank == 0:
                raise ValueError(
                    'DiagonalGaussian needs parameters with an event axis (rank >= 1); '
                    'for a scalar action use shape [..., 1].')
            shape = tf.broadcast_dynamic_shape(tf.shape(mean), tf.shape(log_std))
            self._mean = tf.broadcast_to(mean, shape)
            self._log_std = tf.broadcast_to(log_std, shape)
            self._mean.set_shape(static_shape)
            self._log_std.set_shape(static_shape)

    @property
    def mean(self):
        """Means, of the full shape `[..., size]`."""
        return self._mean

    @property
    def log_std(self):
        """Log standard deviations, of the full shape `[..., size]`."""
        return self._log_std

    @property
    def std(self):
        """Standard deviations, of the full shape `[..., size]`."""
        return tf.exp(self._log_std)

    @property
    def parameters(self):
        """Dictionary of the constructor arguments, to store and rebuild the policy."""
        return {'mean': self._mean, 'log_std': self._log_std}

    def sample(self, seed=None):
        """Draws one action per batch element; honours the graph-level seed.

        Args:
          seed: Optional operation-level seed.

        Returns:
          Tensor `[..., size]`.
        """
        with tf.name_scope('sample'):
            noise = tf.random.normal(tf.shape(self._mean), dtype=self._mean.dtype, seed=seed)
            return self._mean + self.std * noise

    def mode(self):
        """The most likely action: the mean."""
        return self._mean

    def log_prob(self, value):
        """Log density of actions, summed over the event axis.

        Args:
          value: Tensor `[..., size]` of actions.

        Returns:
          Tensor `[...]`.
        """
        with tf.name_scope('log_prob'):
            value = tf.convert_to_tensor(value, dtype=self._mean.dtype)
            normalized = (value - self._mean) * tf.exp(-self._log_std)
            per_dimension = (
                -0.5 * tf.square(normalized) - self._log_std - 0.5 * math.log(2 * math.pi))
            return tf.reduce_sum(per_dimension, -1)

    def clipped_log_prob(self, value, low, high):
        """Log probability of actions as executed by an environment that clips them.

        An environment that clips actions to `[low, high]` executes every sample
        beyond a bound as the bound itself, so each bound carries the probability
        of all samples beyond it (the clipped action policy gradient of Fujita and
        Maeda, 2018). Unlike the density of the unclipped sample, this keeps the
        gradient of a mean beyond a bound pointing back whenever the bound is a
        bad action, and does not reward pushing the mean past the bound.

        Args:
          value: Tensor `[..., size]` of actions, clipped or not.
          low: Lower bound of the executed actions, broadcastable to `value`.
          high: Upper bound of the executed actions, broadcastable to `value`.

        Returns:
          Tensor `[...]`.
        """
        with tf.name_scope('clipped_log_prob'):
            value = tf.convert_to_tensor(value, dtype=self._mean.dtype)
            low = tf.convert_to_tensor(low, dtype=self._mean.dtype)
            high = tf.convert_to_tensor(high, dtype=self._mean.dtype)
            inverse_std = tf.exp(-self._log_std)
            density = (
                -0.5 * tf.square((value - self._mean) * inverse_std) - self._log_std -
                0.5 * math.log(2 * math.pi))
            below = _log_normal_cdf((low - self._mean) * inverse_std)
            above = _log_normal_cdf((self._mean - high) * inverse_std)
            per_dimension = tf.where(
                value <= low, below, tf.where(value >= high, above, density))
            return tf.reduce_sum(per_dimension, -1)

    def entropy(self):
        """Differential entropy, summed over the event axis; tensor `[...]`."""
        with tf.name_scope('entropy'):
            return tf.reduce_sum(self._log_std + 0.5 * math.log(2 * math.pi * math.e), -1)

    def kl(self, other):
        """Kullback-Leibler divergence KL(self || other), summed over the event axis.

        Args:
          other: Another `DiagonalGaussian` of a broadcastable shape.

        Returns:
          Tensor `[...]`.

        Raises:
          TypeError: If `other` is not a `DiagonalGaussian`.
        """
        _check_same_type(self, other)
        with tf.name_scope('kl'):
            variance_ratio = tf.exp(2 * (self._log_std - other.log_std))
            scaled_mean_difference = (self._mean - other.mean) * tf.exp(-other.log_std)
            per_dimension = 0.5 * (
                variance_ratio + tf.square(scaled_mean_difference) - 1
            ) + other.log_std - self._log_std
            return tf.reduce_sum(per_dimension, -1)


class _LogitsDistribution:
    """A distribution whose one parameter is a float tensor of logits.

    Subclasses set `_scope`, the name scope of their construction, and
    `_axis`, how error messages describe the logits' last axis.
    """

    _scope = _axis = None

    def __init__(self, logits):
        with tf.name_scope(self._scope):
            self._logits = _checked_logits(type(self).__name__, logits, self._axis)

    @property
    def logits(self):
        """The logits, `[..., last axis]`."""
        return self._logits

    @property
    def parameters(self):
        """Dictionary of the constructor arguments, to store and rebuild the policy."""
        return {'logits': self._logits}


class Categorical(_LogitsDistribution):
    """Distribution over the integer classes `0 .. num_classes - 1`.

    Args:
      logits: Float tensor `[..., num_classes]` of unnormalised log probabilities.

    Raises:
      TypeError: If the logits are not floating point.
      ValueError: If the logits have no class axis.
    """

    _scope, _axis = 'categorical', 'a class axis (shape [..., num_classes])'

    @property
    def probs(self):
        """Class probabilities `[..., num_classes]`."""
        return tf.nn.softmax(self._logits)

    def sample(self, seed=None):
        """Draws one class index per batch element; honours the graph-level seed.

        Args:
          seed: Optional operation-level seed.

        Returns:
          Int32 tensor `[...]`.
        """
        with tf.name_scope('sample'):
            num_classes = tf.shape(self._logits)[-1]
            flat_logits = tf.reshape(self._logits, [-1, num_classes])
            flat_samples = tf.random.categorical(flat_logits, 1, dtype=tf.int32, seed=seed)
            return tf.reshape(flat_samples, tf.shape(self._logits)[:-1])

    def mode(self):
        """The most likely class index, int32 tensor `[...]`."""
        return tf.argmax(self._logits, -1, output_type=tf.int32)

    def log_prob(self, value):
        """Log probability of class indices.

        Args:
          value: Integer tensor `[...]` of class indices; an index outside the
            classes is an error when the graph runs.

        Returns:
          Tensor `[...]`.

        Raises:
          TypeError: If `value` is not an integer tensor.
        """
        value = tf.convert_to_tensor(value)
        if not value.dtype.is_integer:
            raise TypeError(
                f'Categorical.log_prob needs integer class indices, got {value.dtype.name}.')
        with tf.name_scope('log_prob'):
            return -tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.cast(value, tf.int32), logits=self._logits)

    def entropy(self):
        """Entropy in nats, tensor `[...]`."""
        with tf.name_scope('entropy'):
            log_probs = tf.nn.log_softmax(self._logits)
            # Classes with zero probability (logit -inf) contribute nothing.
            return -tf.reduce_sum(tf.math.multiply_no_nan(log_probs, self.probs), -1)

    def kl(self, other):
        """Kullback-Leibler divergence KL(self || other), tensor `[...]`.

        Args:
          other: Another `Categorical` over the same classes.

        Returns:
          Tensor `[...]`.

        Raises:
          TypeError: If `other` is not a `Categorical`.
        """
        _check_same_type(self, other)
        with tf.name_scope('kl'):
            log_ratio = tf.nn.log_softmax(self._logits) - tf.nn.log_softmax(other.logits)
            return tf.reduce_sum(tf.math.multiply_no_nan(log_ratio, self.probs), -1)


class FactoredCategorical:
    """Independent categoricals, one per entry of an integer vector (MultiDiscrete actions).

    Entries with fewer classes than others pad their logits with `PADDING`,
    a logit so low that those classes have probability zero.

    Args:
      logits: Float tensor `[..., entries, num_classes]`.

    Raises:
      TypeError: If the logits are not floating point.
      ValueError: If the logits have no entry and class axes.
    """

    # Logit of the classes an entry does not have.
    PADDING = -1e9

    def __init__(self, logits):
        with tf.name_scope('factored_categorical'):
            logits = tf.convert_to_tensor(logits)
            if logits.shape.rank is not None and logits.shape.rank < 2:
                raise ValueError(
                    'FactoredCategorical needs logits of shape [..., entries, num_classes].')
            self._entries = Categorical(logits)

    @property
    def logits(self):
        """Unnormalised log probabilities `[..., entries, num_classes]`."""
        return self._entries.logits

    @property
    def parameters(self):
        """Dictionary of the constructor arguments, to store and rebuild the policy."""
        return {'logits': self._entries.logits}

    def sample(self, seed=None):
        """Draws one class index per entry; int32 tensor `[..., entries]`."""
        return self._entries.sample(seed)

    def mode(self):
        """The most likely class of each entry, int32 tensor `[..., entries]`."""
        return self._entries.mode()

    def log_prob(self, value):
        """Log probability of integer vectors `[..., entries]`, summed over entries: `[...]`."""
        return tf.reduce_sum(self._entries.log_prob(value), -1)

    def entropy(self):
        """Entropy in nats, summed over entries: `[...]`."""
        return tf.reduce_sum(self._entries.entropy(), -1)

    def kl(self, other):
        """KL(self || other), summed over entries: `[...]`."""
        _check_same_type(self, other)
        return tf.reduce_sum(self._entries.kl(other._entries), -1)  # pylint: disable=protected-access


class Bernoulli(_LogitsDistribution):
    """Independent Bernoulli variables, one per entry of a 0/1 vector (MultiBinary actions).

    Args:
      logits: Float tensor `[..., entries]`, the log odds of each entry being 1.

    Raises:
      TypeError: If the logits are not floating point.
      ValueError: If the logits have no entry axis.
    """

    _scope, _axis = 'bernoulli', 'an entry axis (shape [..., entries])'

    def sample(self, seed=None):
        """Draws 0 or 1 per entry; honours the graph-level seed; int32 tensor `[..., entries]`."""
        with tf.name_scope('sample'):
            uniform = tf.random.uniform(tf.shape(self._logits), seed=seed)
            return tf.cast(uniform < tf.sigmoid(self._logits), tf.int32)

    def mode(self):
        """The more likely value of each entry (0 on ties), int32 tensor `[..., entries]`."""
        return tf.cast(self._logits > 0, tf.int32)

    def log_prob(self, value):
        """Log probability of 0/1 vectors `[..., entries]`, summed over entries: `[...]`."""
        with tf.name_scope('log_prob'):
            labels = tf.cast(value, self._logits.dtype)
            return -tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(
                labels=labels, logits=self._logits), -1)

    def entropy(self):
        """Entropy in nats, summed over entries: `[...]`."""
        with tf.name_scope('entropy'):
            probs = tf.sigmoid(self._logits)
            return tf.reduce_sum(
                probs * tf.nn.softplus(-self._logits) +
                (1 - probs) * tf.nn.softplus(self._logits), -1)

    def kl(self, other):
        """KL(self || other), summed over entries: `[...]`."""
        _check_same_type(self, other)
        with tf.name_scope('kl'):
            probs = tf.sigmoid(self._logits)
            ones = tf.nn.softplus(-other.logits) - tf.nn.softplus(-self._logits)
            zeros = tf.nn.softplus(other.logits) - tf.nn.softplus(self._logits)
            return tf.reduce_sum(probs * ones + (1 - probs) * zeros, -1)


def _checked_logits(distribution, logits, axis):
    """The logits as a tensor; raises unless they are floating point with `axis`."""
    logits = tf.convert_to_tensor(logits)
    if not logits.dtype.is_floating:
        raise TypeError(f'{distribution} needs floating logits, got {logits.dtype.name}.')
    if logits.shape.rank == 0:
        raise ValueError(f'{distribution} needs logits with {axis}.')
    return logits


def _log_normal_cdf(x):
    """Log of the standard normal distribution function, finite far into the left tail."""
    # Below -5 the distribution function underflows in float32; its asymptotic
    # series is accurate there. Each branch gets safe inputs to keep gradients finite.
    is_tail = x < -5.0
    central = tf.where(is_tail, tf.zeros_like(x), x)
    tail = tf.where(is_tail, x, -5.0 * tf.ones_like(x))
    central_value = tf.math.log(0.5 * tf.math.erfc(-central / math.sqrt(2.0)))
    tail_value = (
        -0.5 * tf.square(tail) - tf.math.log(-tail) - 0.5 * math.log(2 * math.pi) +
        tf.math.log1p(-1 / tf.square(tail) + 3 / tail ** 4))
    return tf.where(is_tail, tail_value, central_value)


def _check_same_type(distribution, other):
    if type(other) is not type(distribution):
        raise TypeError(
            f'{type(distribution).__name__}.kl needs another {type(distribution).__name__}, '
            f'got {type(other).__name__}.')
