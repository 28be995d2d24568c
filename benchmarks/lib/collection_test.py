import os

import pytest

from lib import collection

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.integration
def test_a_checkouts_collection_step_is_measured_in_a_process_of_its_own():
    result = collection.measure_in_checkout(
        ROOT, 'agents.scripts.train_test:tiny_pendulum', 'inprocess', 'acting')
    assert set(result) == {'operations', 'batch_step'}
    assert result['operations'] > 0 and result['batch_step'] > 0


def test_the_floor_loop_steps_the_environments_steps_per_run_times():
    import tensorflow as tf

    with tf.Graph().as_default():
        counter = tf.compat.v1.get_variable('counter', (), tf.int32, tf.zeros_initializer())
        loop = collection.repeated(lambda: counter.assign_add(1))
        with tf.compat.v1.Session() as sess:
            sess.run(counter.initializer)
            assert sess.run(loop) == [collection.STEPS_PER_RUN]
            assert sess.run(counter) == collection.STEPS_PER_RUN
