"""The work of rl-baselines3-zoo's HalfCheetah schedule, and the machine's matmul peak.

`mujoco_throughput.py` trains this schedule and sets its update's
arithmetic against the peak; `update_ceiling.py` runs bare gradient steps of
its shape, and the XLA-flags probe reads its update's time per gradient step.
"""

import time

OBSERV_SIZE, ACTION_SIZE = 17, 6  # HalfCheetah-v5's.
# The work this benchmark measures: rl-baselines3-zoo's HalfCheetah schedule.
SCHEDULE = dict(
    num_agents=8, rollout_length=64, minibatch_size=64, update_epochs=20,
    policy_layers=(256, 256), value_layers=(256, 256), activation='relu')
PEAK_SIZE = 2048


def layer_sizes(observ_size, action_size):
    """The sizes of the schedule's policy and value networks, inputs to outputs."""
    return ([observ_size, *SCHEDULE['policy_layers'], action_size],
            [observ_size, *SCHEDULE['value_layers'], 1])


def gradient_step_flops(observ_size, action_size, minibatch_size=None):
    """FLOPs of the matrix products of one gradient step of the schedule's two networks.

    Forward, each layer's product; backward, the product to its weights and,
    but for the first layer, the product to its inputs: two multiply-adds a
    weight per sample, three for all layers but the first.

    Args:
      observ_size: Size of an observation.
      action_size: Size of an action.
      minibatch_size: Samples of the step; the schedule's if None.
    """
    flops = 0
    for sizes in layer_sizes(observ_size, action_size):
        weights = [inputs * outputs for inputs, outputs in zip(sizes[:-1], sizes[1:])]
        flops += 2 * (minibatch_size or SCHEDULE['minibatch_size']) * (
            3 * sum(weights) - weights[0])
    return flops


def matmul_peak():
    """GFLOP/s of a float32 matmul of PEAK_SIZE, the best of 5 runs, with the scripts' session."""
    import tensorflow as tf

    from agents.scripts import run_api
    with tf.Graph().as_default():
        matrix = tf.Variable(tf.random.normal([PEAK_SIZE, PEAK_SIZE]))
        product = tf.reduce_sum(tf.matmul(matrix, matrix))
        with tf.compat.v1.Session(config=run_api.session_config()) as sess:
            sess.run(matrix.initializer)
            sess.run(product)
            seconds = []
            for _ in range(5):
                start = time.perf_counter()
                sess.run(product)
                seconds.append(time.perf_counter() - start)
    return 2 * PEAK_SIZE ** 3 / min(seconds) / 1e9


def gradient_steps(steps):
    """The gradient steps of the pinned schedule in `steps` training steps."""
    rollout = SCHEDULE['num_agents'] * SCHEDULE['rollout_length']
    return steps // rollout * (
        SCHEDULE['update_epochs'] * rollout // SCHEDULE['minibatch_size'])


def update_seconds(steps, agents, collection_rate):
    """Our run's training time less its collection, measured apart at `collection_rate`."""
    return agents['seconds'] - steps / collection_rate
