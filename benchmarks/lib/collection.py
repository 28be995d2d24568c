"""Timing a config's collection step: the graph's operations and the environments apart.

`collection_profile.py` takes one checkout's batch step apart with these; the
probes of collection (checkouts, session options, the floor, overlapped
halves) time variants of the same step. A collection step is the training
graph's `simulate` loop of `STEPS_PER_RUN` batch steps per `session.run`.

Run as `python -m lib.collection CONFIG,BACKEND,MODE` from `benchmarks/`, it
prints the JSON of one `measure_collection` mode: `measure_in_checkout` runs
it so against another checkout's `agents`.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

STEPS_PER_RUN = 16
PAUSES = (0.0, 300e-6, 500e-6)


def collection_step(config, batch_env):
    """The training graph's collection, `STEPS_PER_RUN` steps per run, and its `is_training`.

    Whether to train, log and reset are fed, as in a training run, so the graph
    is the one training runs; it acts and does not log unless fed otherwise.
    """
    import tensorflow as tf

    from agents import tools
    is_training, log, reset = (
        tf.compat.v1.placeholder_with_default(False, (), name) for name in (
            'is_training', 'log', 'reset'))
    algo = config.algorithm(
        batch_env, tf.compat.v1.train.get_or_create_global_step(), is_training, log, config)
    return tools.simulate(batch_env, algo, log, reset, STEPS_PER_RUN), is_training


def measure_collection(config_name, backend, modes, session_config=None, runs=200):
    """Time one config's collection step in a new graph and session.

    Args:
      config_name: Name of a shipped config.
      backend: Environment backend, such as 'parallel' or 'inprocess'.
      modes: Any of 'acting' and 'training', measured in that order.
      session_config: `ConfigProto` of the session; `run_api.session_config()` if None.
      runs: Runs of the median of each mode.

    Returns:
      Dict with `first_run`, the seconds of the session's first run of the
      step (acting, with the graph's optimization and instantiation), and
      for each mode the `operations` and microseconds (`batch_step`) per
      batch step.
    """
    import tensorflow as tf

    from agents.scripts import environments
    try:
        from agents.scripts import run_api
    except ImportError:  # A checkout from before the run API (probes/collection_checkouts.py).
        from agents.scripts import utility as run_api
    config = run_api.make_config(config_name)
    result = {}
    with tf.Graph().as_default():
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, config.num_agents), backend)
        try:
            op, is_training = collection_step(config, batch_env)
            with tf.compat.v1.Session(config=session_config or run_api.session_config()) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                sess.run(batch_env.reset())
                start = time.perf_counter()
                sess.run(op)
                result['first_run'] = time.perf_counter() - start
                for mode in modes:
                    feed = {is_training: mode == 'training'}
                    seconds = median_seconds_per_batch_step(sess, op, runs, feed)
                    result[mode] = dict(
                        operations=traced_operations(sess, op, feed), batch_step=seconds * 1e6)
        finally:
            batch_env.close()
    return result


def stepping_loop(batch_env):
    """A graph loop that only steps the environments in the graph, with zero actions."""
    import tensorflow as tf
    return repeated(lambda: batch_env.simulate(tf.zeros_like(batch_env.action)))


def repeated(build_step):
    """A graph loop that runs what `build_step()` builds `STEPS_PER_RUN` times, in turn."""
    import tensorflow as tf

    def body(index):
        with tf.control_dependencies(tf.nest.flatten(build_step())):
            return index + 1

    return tf.while_loop(lambda index: index < STEPS_PER_RUN, body, [0], parallel_iterations=1)


def median_seconds_per_batch_step(sess, op, runs, feed=None):
    """Seconds per batch step of the median run of a loop, after 20 warm-up runs.

    A run that holds an update of the algorithm takes far longer than the
    others; with no more than one run in four holding one, the median is a
    run without.
    """
    for _ in range(20):
        sess.run(op, feed)
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        sess.run(op, feed)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds)) / STEPS_PER_RUN


def traced_operations(sess, op, feed=None):
    """Operations per batch step of the cheapest of four traced runs, one without an update."""
    import tensorflow as tf
    counts = []
    for _ in range(4):
        metadata = tf.compat.v1.RunMetadata()
        sess.run(op, feed, options=tf.compat.v1.RunOptions(
            trace_level=tf.compat.v1.RunOptions.FULL_TRACE), run_metadata=metadata)
        counts.append(sum(len(device.node_stats) for device in metadata.step_stats.dev_stats))
    return min(counts) / STEPS_PER_RUN


def profile_environments(config_name, steps):
    """Microseconds of a batch step of the environments from Python, after each pause."""
    from agents.scripts import environments
    from agents.scripts import run_api
    from agents.tools import envs
    config = run_api.make_config(config_name)
    batch_env = envs.make_batch_env(
        'parallel', environments.environment_constructors(config, config.num_agents),
        return_infos=False)
    try:
        space = batch_env.action_space
        space.seed(0)
        actions = np.stack([space.sample() for _ in range(config.num_agents)])
        batch_env.reset()
        results = {}
        for pause in PAUSES:
            latencies = []
            for _ in range(steps):
                start = time.perf_counter()
                while time.perf_counter() - start < pause:
                    pass  # Busy, as the graph's work keeps this process busy.
                start = time.perf_counter()
                _, _, terminated, truncated = batch_env.step(actions)[:4]
                latencies.append(time.perf_counter() - start)
                done = np.flatnonzero(terminated | truncated)
                if done.size:
                    batch_env.reset(done)
            results[f'{pause * 1e6:.0f}'] = dict(
                median=float(np.median(latencies)) * 1e6, mean=float(np.mean(latencies)) * 1e6)
        return results
    finally:
        batch_env.close()


def measure_in_checkout(checkout, config_name, backend, mode):
    """`measure_collection` of one mode in a new process that imports `checkout`'s `agents`.

    The process runs this module from the `benchmarks/` directory beside it,
    so the measuring code is this checkout's whatever `checkout` holds.

    Args:
      checkout: Directory of a checkout of this repository.
      config_name: Name of a shipped config.
      backend: Environment backend.
      mode: 'acting' or 'training'.

    Returns:
      Dict of the mode's `operations` and microseconds per batch step (`batch_step`).
    """
    output = subprocess.run(
        [sys.executable, '-m', 'lib.collection', f'{config_name},{backend},{mode}'],
        check=True, capture_output=True, text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        env=dict(os.environ, PYTHONPATH=checkout)).stdout
    return json.loads(output.strip().splitlines()[-1])


if __name__ == '__main__':
    _config_name, _backend, _mode = sys.argv[1].split(',')
    print(json.dumps(measure_collection(_config_name, _backend, (_mode,))[_mode]))
