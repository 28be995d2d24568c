"""The rate of a config's training phase, as `train.py`'s loop runs it.

`train_throughput.py` sets it against SB3's PPO, and `mujoco_throughput.py`
takes a HalfCheetah run's collection apart with it (the policy acting
without learning).
"""

import time


def measure_batchppo(config, updates, backend, steps_per_run, is_training=True):
    """Env steps per second of the training phase of a config, after one warm-up update.

    Args:
      config: Run configuration with rollouts (`rollout_length`).
      updates: Number of updates (rollouts of every environment) to time.
      backend: Environment backend.
      steps_per_run: Environment steps per `session.run`.
      is_training: False runs the policy without learning: collection alone.

    Returns:
      Environment steps per second.
    """
    import tensorflow as tf

    from agents import tools
    from agents.scripts import environments
    from agents.scripts import run_api
    num_envs = config.num_agents
    steps_per_update = config.rollout_length * num_envs
    with tf.Graph().as_default():
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, num_envs), backend)
        try:
            loop = tools.Loop(None)
            graph = run_api.define_simulation_graph(batch_env, config.algorithm, config, loop)
            loop.add_phase(
                'train', graph.done, graph.score, graph.summary, steps=steps_per_update,
                feed={graph.is_training: is_training}, steps_per_run=steps_per_run)
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                list(loop.run(sess, None, steps_per_update))
                start = time.perf_counter()
                list(loop.run(sess, None, (1 + updates) * steps_per_update))
                duration = time.perf_counter() - start
        finally:
            batch_env.close()
    return updates * steps_per_update / duration
