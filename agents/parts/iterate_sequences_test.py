"""Tests for iterating over shuffled mini-batches of sequences in the graph."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from agents.parts.iterate_sequences import iterate_sequences


def _initialized_session():
    sess = tf.compat.v1.Session()
    sess.run(tf.compat.v1.global_variables_initializer())
    return sess


def _numbered_sequences(num_sequences, steps):
    """Sequences whose steps hold 100 * sequence index + step + 1."""
    return (100 * np.arange(num_sequences)[:, None] + np.arange(steps)[None] + 1).astype(
        np.float32)


def test_each_sequence_is_visited_once_per_epoch():
    num_sequences, num_epochs, batch_size = 6, 4, 3
    with tf.Graph().as_default():
        visits = tf.Variable(tf.zeros([num_sequences], tf.int32), trainable=False)
        calls = tf.Variable(0, trainable=False)

        def consumer(batch):
            sequence_index = tf.cast(batch['sequence'][:, 0] // 100, tf.int32)
            visit = visits.scatter_add(tf.IndexedSlices(tf.ones_like(sequence_index),
                                                        sequence_index))
            calls.assign_add(1)  # Not returned, runs all the same.
            with tf.control_dependencies([visit]):
                return tf.shape(batch['sequence'])[0]

        sizes = iterate_sequences(
            consumer, 0, _numbered_sequences(num_sequences, 5), [5] * num_sequences,
            batch_size=batch_size, num_epochs=num_epochs)
        with _initialized_session() as sess:
            sizes = sess.run(sizes)
            assert sizes.tolist() == [batch_size] * 8
            assert sess.run(visits).tolist() == [num_epochs] * num_sequences
            assert sess.run(calls) == 8


def test_without_batch_size_each_epoch_is_one_batch():
    with tf.Graph().as_default():
        calls = tf.Variable(0, trainable=False)

        def consumer(batch):
            calls.assign_add(1)
            return tf.reduce_sum(batch['sequence']), tf.reduce_sum(batch['length'])

        sums, lengths = iterate_sequences(
            consumer, (0.0, 0), _numbered_sequences(3, 2), [2, 1, 2], num_epochs=3)
        with _initialized_session() as sess:
            sums, lengths = sess.run((sums, lengths))
            assert sess.run(calls) == 3
    # Step 1 of the second sequence lies after its length and is padded with 0.
    np.testing.assert_allclose(sums, [(1 + 2) + 101 + (201 + 202)] * 3)
    assert lengths.tolist() == [5] * 3


def test_remainder_smaller_than_a_batch_is_dropped():
    with tf.Graph().as_default():
        sizes = iterate_sequences(
            lambda batch: tf.shape(batch['length'])[0], 0, tf.zeros([5, 1]), [1] * 5,
            batch_size=2, num_epochs=3)
        with _initialized_session() as sess:
            assert sess.run(sizes).tolist() == [2] * 7  # 15 chunks in total.


def test_batch_size_larger_than_chunks_uses_all_chunks():
    with tf.Graph().as_default():
        sizes = iterate_sequences(
            lambda batch: tf.shape(batch['length'])[0], 0, tf.zeros([3, 1]), [1] * 3,
            batch_size=10, num_epochs=2)
        with _initialized_session() as sess:
            assert sess.run(sizes).tolist() == [3, 3]


def test_chunks_are_padded_and_empty_chunks_dropped():
    sequences = _numbered_sequences(3, 5)
    with tf.Graph().as_default():
        chunks, lengths = iterate_sequences(
            lambda batch: (batch['sequence'], batch['length']),
            (tf.zeros([0, 2]), tf.zeros([0], tf.int32)),
            sequences, [5, 0, 3], chunk_length=2, padding_value=-1)
        with _initialized_session() as sess:
            chunks, lengths = sess.run((chunks, lengths))
    assert chunks.shape == (1, 5, 2)
    received = sorted(zip(chunks[0].tolist(), lengths[0].tolist()))
    expected = sorted([
        ([1, 2], 2), ([3, 4], 2), ([5, -1], 1), ([201, 202], 2), ([203, -1], 1)])
    assert received == expected


def test_nested_sequences_and_shapes_reach_the_consumer():
    Step = collections.namedtuple('Step', 'observ, action')
    shapes = []

    def consumer(batch):
        observ, action = batch['sequence']
        shapes.append((observ.shape.as_list(), action.shape.as_list(), action.dtype))
        return tf.reduce_sum(tf.cast(action, tf.float32))

    with tf.Graph().as_default():
        num_sequences = tf.compat.v1.placeholder(tf.int32, [])
        sequences = Step(tf.ones([num_sequences, 6, 3]), tf.ones([num_sequences, 6], tf.int32))
        length = tf.fill([num_sequences], 6)
        sums = iterate_sequences(consumer, 0.0, sequences, length, chunk_length=4,
                                 batch_size=2, padding_value=1)
        with _initialized_session() as sess:
            np.testing.assert_allclose(sess.run(sums, {num_sequences: 2}), [8, 8])
    assert shapes == [([None, 4, 3], [None, 4], tf.int32)]


def test_optimizer_step_per_batch():
    with tf.Graph().as_default():
        weight = tf.compat.v1.get_variable(
            'weight', [], initializer=tf.compat.v1.zeros_initializer())
        global_step = tf.compat.v1.train.get_or_create_global_step()
        optimizer = tf.compat.v1.train.AdamOptimizer(0.1)

        def consumer(batch):
            loss = tf.reduce_mean(tf.square(batch['sequence'] - weight))
            train = optimizer.minimize(loss, global_step=global_step)
            with tf.control_dependencies([train]):
                return tf.identity(loss), tf.constant('')

        targets = np.full([4, 3], 3.0, np.float32)
        losses, summaries = iterate_sequences(
            consumer, (0.0, ''), targets, [3, 3, 3, 3], batch_size=2, num_epochs=10)
        with _initialized_session() as sess:
            losses, _ = sess.run((losses, summaries))
            assert sess.run(global_step) == 20
            assert sess.run(weight) > 1.5
    assert losses.shape == (20,)
    assert losses[-1] < losses[0]


def test_compiled_loop_trains_as_the_plain_one():
    # The loop over batches as one XLA-compiled function: the same batches, in
    # the same order, give the same losses and weights, up to float rounding.
    def train(jit_compile):
        with tf.Graph().as_default():
            tf.compat.v1.set_random_seed(0)
            weight = tf.compat.v1.get_variable(
                'weight', [3], initializer=tf.compat.v1.zeros_initializer())
            optimizer = tf.compat.v1.train.AdamOptimizer(0.1)

            def consumer(batch):
                error = batch['sequence'] - weight
                mask = tf.sequence_mask(batch['length'], 4, tf.float32)[..., None]
                loss = tf.reduce_sum(tf.square(error) * mask) / tf.reduce_sum(mask)
                with tf.control_dependencies([optimizer.minimize(loss)]):
                    return tf.identity(loss)

            targets = np.random.RandomState(0).normal(size=[6, 8, 3]).astype(np.float32)
            losses = iterate_sequences(
                consumer, 0.0, targets, [8, 5, 8, 2, 8, 8], chunk_length=4, batch_size=3,
                num_epochs=5, jit_compile=jit_compile)
            with _initialized_session() as sess:
                return sess.run(losses), sess.run(weight)

    (plain_losses, plain_weight), (losses, weight) = train(False), train(True)
    assert plain_losses.shape == (18,)  # 11 chunks over 5 epochs, 3 at a time.
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-5)
    np.testing.assert_allclose(weight, plain_weight, rtol=1e-5)
    assert np.abs(weight).min() > 0.01


def test_no_valid_step_fails_clearly():
    with tf.Graph().as_default():
        outputs = iterate_sequences(lambda batch: 0, 0, tf.zeros([2, 3]), [0, 0],
                                    chunk_length=2, batch_size=2)
        with _initialized_session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match='no sequence with a valid'):
                sess.run(outputs)


def test_outputs_must_match_template():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match='returned a int32 tensor where output_template has '
                                            'float32'):
            iterate_sequences(lambda batch: 0, 0.0, tf.zeros([1, 1]), [1])
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='lengths'):
            iterate_sequences(lambda batch: (0.0,), (0.0, ''), tf.zeros([1, 1]), [1])


def test_shuffles_between_epochs():
    with tf.Graph().as_default():
        firsts = iterate_sequences(
            lambda batch: batch['sequence'][0, 0], 0.0, _numbered_sequences(20, 1), [1] * 20,
            batch_size=1, num_epochs=2)
        with _initialized_session() as sess:
            firsts = sess.run(firsts)
    first_epoch, second_epoch = firsts[:20], firsts[20:]
    assert sorted(first_epoch) == sorted(second_epoch) == sorted(100 * np.arange(20) + 1)
    assert first_epoch.tolist() != second_epoch.tolist()


@pytest.mark.parametrize('arguments, message', [
    ({'chunk_length': 0}, 'chunk_length'),
    ({'batch_size': 2.5}, 'batch_size'),
    ({'num_epochs': 0}, 'num_epochs'),
])
def test_invalid_arguments(arguments, message):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            iterate_sequences(lambda batch: 0, 0, tf.zeros([1, 1]), [1], **arguments)
