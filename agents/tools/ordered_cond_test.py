"""Tests of ordered_cond: ordering, lowering and state in both kinds of conditional."""

import numpy as np
import pytest
import tensorflow as tf

from agents.tools.ordered_cond import ordered_cond

tf.compat.v1.disable_eager_execution()


def _variables(count):
    return [
        tf.compat.v1.get_variable(
            f'variable_{index}', initializer=tf.constant(float(index)), use_resource=True)
        for index in range(count)]


def _conditional(outputs):
    op = tf.nest.flatten(outputs)[0].op
    while op.type not in ('If', 'StatelessIf'):
        op = op.inputs[0].op
    return op


@pytest.mark.parametrize('as_function', [False, True])
def test_branches_wait_for_control_dependencies_and_update_state(as_function):
    captured = 20
    with tf.Graph().as_default():
        variables = _variables(captured)
        counter = tf.compat.v1.get_variable(
            'counter', initializer=tf.constant(0), use_resource=True)
        pred = tf.compat.v1.placeholder(tf.bool, [])

        def true_fn():
            total = tf.add_n([variable.read_value() for variable in variables])
            with tf.control_dependencies([counter.assign_add(1)]):
                return tf.identity(total)

        with tf.control_dependencies([variables[0].assign(100.0)]):
            total = ordered_cond(
                pred, true_fn, lambda: tf.constant(-1.0), as_function=as_function)
        lowered = _conditional(total).get_attr('_lower_using_switch_merge')
        assert lowered != as_function
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            expected = 100.0 + sum(range(1, captured))
            assert sess.run(total, {pred: True}) == expected
            assert sess.run(total, {pred: False}) == -1.0
            assert sess.run(total, {pred: True}) == expected
            assert sess.run(counter) == 2  # Only the runs that took the branch.


def test_random_operations_in_a_function_branch_advance_between_runs():
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(0)
        variables = _variables(3)

        def true_fn():
            scale = tf.add_n([variable.read_value() for variable in variables])
            return tf.random.shuffle(tf.range(10)) * tf.cast(scale > 0, tf.int32)

        permutation = ordered_cond(
            tf.constant(True), true_fn, lambda: tf.range(10), as_function=True)
        assert not _conditional(permutation).get_attr('_lower_using_switch_merge')
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            permutations = [sess.run(permutation) for _ in range(4)]
        assert all(sorted(each) == list(range(10)) for each in permutations)
        assert len({tuple(each) for each in permutations}) > 1
        np.testing.assert_array_equal(sorted(permutations[0]), np.arange(10))
