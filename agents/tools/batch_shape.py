"""Values that graph parts take one at a time or in batches, checked against their shape."""


def as_batch(value, shape, owner):
    """The value as a batch `[batch, *shape]`: a single value of `shape` becomes a batch of one.

    Args:
      value: Tensor of shape `[batch, *shape]`, or of `shape` for one value.
      shape: `tf.TensorShape` of a single value.
      owner: Name of what takes the values, for the error message.

    Raises:
      ValueError: If the value's shape does not fit `shape`.

    Returns:
      The value, with a batch dimension.
    """
    if value.shape.rank == shape.rank:
        value = value[None]
    if not value.shape[1:].is_compatible_with(shape):
        raise ValueError(
            f'{owner} of shape {shape} cannot take values of shape {value.shape}; '
            f'expected [batch, *{shape.as_list()}].')
    return value
