"""Running a training step over shuffled mini-batches of sequences, in the graph."""

import tensorflow as tf

from agents.tools import nested


def iterate_sequences(consumer_fn, output_template, sequences, length, chunk_length=None,
                      batch_size=None, num_epochs=1, padding_value=0, jit_compile=False):
    """Calls `consumer_fn` on shuffled mini-batches of sequences for some epochs.

    Builds one graph operation that, when run, optionally splits the sequences
    into chunks of `chunk_length` steps, then visits all chunks `num_epochs`
    times, each epoch in a new random order, `batch_size` chunks at a time.
    Steps at or after each sequence's length are set to `padding_value`, so
    the consumer never sees stale data (a padding of 1 keeps, say, log
    probabilities of padded steps finite).

    The epochs form one stream that is cut into batches of exactly
    `min(batch_size, number of chunks)` chunks, so the consumer runs
    `num_epochs * number_of_chunks // that_batch_size` times and a final
    remainder smaller than a batch is dropped. Without `batch_size`, each
    batch holds all chunks and the consumer runs `num_epochs` times.

    The consumer runs inside a `tf.while_loop`, one batch after another, so it
    may build training operations: every stateful operation it creates (such
    as a variable update) runs once per batch, before its outputs are
    returned, even if the outputs do not depend on it. Order the stateful
    operations among themselves with control dependencies as usual.

    Args:
      consumer_fn: Callable taking a dict with the keys 'sequence', a nested
        structure like `sequences` of tensors [batch, time, ...], and
        'length', an int32 vector of the valid steps in each row. It returns
        a nested structure like `output_template`.
      output_template: Nested structure of tensors or values with the
        structure and dtypes of the consumer's outputs, for example
        `(0.0, '')`; the outputs' own static shapes are kept.
      sequences: Nested structure of tensors with leading dimensions
        [number of sequences, time].
      length: Int32 vector of the valid steps of each sequence.
      chunk_length: If set, the sequences are split into chunks of this many
        steps, the last chunk of each sequence padded; chunks without any
        valid step are left out.
      batch_size: Number of chunks per batch; all chunks if None.
      num_epochs: Number of passes over the chunks.
      padding_value: Value written to the steps after each row's length.
      jit_compile: Run the loop over all batches as one function compiled by
        XLA. It is compiled again for every new shape of the sequences, so it
        suits sequences whose shapes stay the same from call to call; the
        consumer must build only operations that XLA compiles.

    Returns:
      Nested structure like `output_template` of the consumer's outputs,
      stacked along a new leading dimension of one entry per batch. Running
      it fails if no sequence has a valid step.

    Raises:
      ValueError: If `chunk_length`, `batch_size` or `num_epochs` is not a
        positive integer, or the consumer's outputs are not structured like
        `output_template`.
      TypeError: If the consumer's outputs differ in dtype from the template.
    """
    for name, value in (('chunk_length', chunk_length), ('batch_size', batch_size)):
        if value is not None and not (isinstance(value, int) and value > 0):
            raise ValueError(f'{name} must be a positive integer or None; got {value!r}.')
    if not (isinstance(num_epochs, int) and num_epochs > 0):
        raise ValueError(f'num_epochs must be a positive integer; got {num_epochs!r}.')
    with tf.name_scope('iterate_sequences'):
        length = tf.convert_to_tensor(length, tf.int32)
        sequences = nested.map(
            lambda sequence: _pad_after_length(sequence, length, padding_value), sequences)
        if chunk_length:
            sequences, length = _split_into_chunks(
                sequences, length, chunk_length, padding_value)
        num_chunks = tf.shape(length)[0]
        if batch_size:
            size = tf.minimum(batch_size, num_chunks)
        else:
            size = num_chunks
        assert_chunks = tf.debugging.assert_positive(
            num_chunks, message='iterate_sequences got no sequence with a valid step')
        with tf.control_dependencies([assert_chunks]):
            num_batches = num_epochs * num_chunks // size
            order = tf.reshape(
                tf.argsort(tf.random.uniform([num_epochs, num_chunks]), axis=1), [-1])

        def consume_batch(batch_index):
            indices = tf.slice(order, [batch_index * size], [size])
            batch = {
                'sequence': nested.map(lambda tensor: tf.gather(tensor, indices), sequences),
                'length': tf.gather(length, indices),
            }
            return _run_with_side_effects(consumer_fn, batch)

        def loop():
            return _loop_and_stack(consume_batch, output_template, num_batches)

        if jit_compile:
            return tf.function(loop, autograph=False, jit_compile=True)()
        return loop()


def _loop_and_stack(body_fn, output_template, num_iterations):
    """Calls `body_fn(index)` for each index in order and stacks the outputs.

    Unlike `tf.scan`, the outputs may have a less specific shape than the
    template, such as an unknown batch dimension.
    """
    template = nested.map(tf.convert_to_tensor, output_template)
    output_shapes = []

    def loop_body(index, arrays):
        outputs = nested.map(_check_output_dtype, template, body_fn(index))
        output_shapes.append(nested.map(lambda output: output.shape, outputs))
        arrays = nested.map(lambda array, output: array.write(index, output), arrays, outputs)
        return index + 1, arrays

    arrays = nested.map(lambda tensor: tf.TensorArray(tensor.dtype, num_iterations), template)
    _, arrays = tf.while_loop(
        lambda index, _: index < num_iterations, loop_body, (0, arrays), parallel_iterations=1)

    def stack(array, shape):
        stacked = array.stack()
        stacked.set_shape(tf.TensorShape([None]).concatenate(shape))
        return stacked

    return nested.map(stack, arrays, output_shapes[-1])


def _check_output_dtype(template, output):
    output = tf.convert_to_tensor(output)
    if output.dtype != template.dtype:
        raise TypeError(
            f'consumer_fn returned a {output.dtype.name} tensor where output_template has '
            f'{template.dtype.name}.')
    return output


def _run_with_side_effects(consumer_fn, batch):
    """Calls the consumer and makes its outputs depend on its stateful operations.

    Inside a loop body, only operations that the outputs depend on run, so an
    optimizer step that the consumer creates but does not return would be
    silently skipped.
    """
    graph = tf.compat.v1.get_default_graph()
    num_previous_ops = len(graph.get_operations())
    outputs = consumer_fn(batch)
    stateful_ops = [
        op for op in graph.get_operations()[num_previous_ops:] if op.op_def.is_stateful]
    with tf.control_dependencies(stateful_ops):
        return nested.map(tf.identity, outputs)


def _pad_after_length(sequence, length, padding_value):
    """Sets the steps of each row at or after its length to the padding value."""
    sequence = tf.convert_to_tensor(sequence)
    is_valid = tf.sequence_mask(length, tf.shape(sequence)[1])
    is_valid = tf.reshape(
        is_valid, tf.concat([tf.shape(is_valid), tf.ones([sequence.shape.rank - 2], tf.int32)], 0))
    padding = tf.cast(padding_value, sequence.dtype)
    return tf.where(is_valid, sequence, padding)


def _split_into_chunks(sequences, length, chunk_length, padding_value):
    """Splits rows into chunks of `chunk_length` steps and drops empty chunks.

    Returns:
      Tuple of the chunks, a nested structure of tensors [chunks,
      chunk_length, ...], and the int32 vector of valid steps per chunk.
    """
    steps = tf.shape(nested.flatten(sequences)[0])[1]
    chunks_per_row = (steps + chunk_length - 1) // chunk_length
    chunk_start = tf.range(chunks_per_row) * chunk_length
    chunk_lengths = tf.clip_by_value(length[:, None] - chunk_start[None, :], 0, chunk_length)
    chunk_lengths = tf.reshape(chunk_lengths, [-1])
    kept = tf.where(chunk_lengths > 0)[:, 0]

    def split(sequence):
        padded = tf.pad(
            sequence,
            [[0, 0], [0, chunks_per_row * chunk_length - steps]] +
            [[0, 0]] * (sequence.shape.rank - 2),
            constant_values=tf.cast(padding_value, sequence.dtype))
        chunks = tf.reshape(
            padded, tf.concat([[-1, chunk_length], tf.shape(sequence)[2:]], 0))
        chunks.set_shape([None, chunk_length] + sequence.shape[2:].as_list())
        return tf.gather(chunks, kept)

    return nested.map(split, sequences), tf.gather(chunk_lengths, kept)
