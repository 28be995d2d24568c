r"""Probe: does stepping two halves of the batch out of phase make collection faster here?

Could collection beat the in-graph floor by letting half of the environments
step in their workers while the policy acts for the other half? This probe
answers it on the machine it runs on before any of it is built into
`tools.simulate`: it times a batch step of the `cheetah` config's
collection three ways, in separate graphs, alternating, on the `parallel`
backend:

- `simulate`: `tools.simulate` as training runs it (16 steps per run);
- `in_turn`: the same algorithm and environments, each step acting for and
  stepping one half of the batch, then the other: what splitting costs;
- `overlapped`: as `in_turn`, but each step sends the
  first half's actions to the workers, computes the second half's while the
  first half steps, sends those, and stores the first half's transition while
  the second half steps. A background thread exchanges with the workers, so
  the graph's own thread never waits for a half that is still stepping when it
  has work for the other. Every action of a step still comes from the weights
  the step began with: no half is in flight across an update.

Both collect as training does (sampled actions, transitions stored), on
rollouts longer than the timed steps, so no update runs while timing. It
also times the environments alone from Python, the floor of the slowest
part. Findings go to docs/design/collection.md; nothing here is shipped.

    python -m benchmarks.probes.collection_overlap [--config cheetah] [--runs 40] [--repeats 3]

Writes CONFIG.md and .json to benchmarks/results/probes/collection_overlap/
(or --out). Run nothing else meanwhile.
"""

import argparse
import concurrent.futures
import os
import time

import numpy as np

from benchmarks.lib import collection
from benchmarks.lib import reporting

STEPS_PER_RUN = 16
WARMUP_RUNS = 10
WAYS = ('simulate', 'in_turn', 'overlapped')


def _config(name):
    from agents.scripts import run_api
    config = run_api.make_config(name)
    with config.unlocked():
        # Longer rollouts than the timed steps: no update while timing.
        config.rollout_length = 4096
    return config


def _halves_loop(batch_env, algo, executor):
    """A graph loop of `STEPS_PER_RUN` steps that steps the batch as two halves.

    With an `executor`, the halves step out of phase in its thread; without
    one, each half steps in turn when its actions are sent (the cost of
    splitting the batch, without any overlap).
    """
    import tensorflow as tf

    from agents.tools.ordered_cond import ordered_cond

    size = len(batch_env)
    # Halves that each have environments in every worker, so both cores step.
    halves = [np.arange(0, size, 2, dtype=np.int32), np.arange(1, size, 2, dtype=np.int32)]
    raw = batch_env._env
    pending = {}

    def send(half, action):
        if executor:
            pending[half] = executor.submit(raw.step, action, halves[half].tolist())
        else:
            pending[half] = concurrent.futures.Future()
            pending[half].set_result(raw.step(action, halves[half].tolist()))
        return np.int32(0)

    def receive(half, token):
        del token
        observ, reward, terminated, truncated = pending.pop(half).result()[:4]
        return (np.asarray(observ, np.float32), np.asarray(reward, np.float32),
                np.asarray(terminated, bool), np.asarray(truncated, bool))

    def step():
        done = batch_env.done.read_value()
        resets = tf.cast(tf.where(done)[:, 0], tf.int32)
        begin = ordered_cond(
            tf.size(resets) > 0,
            lambda: _then(batch_env.reset(resets), lambda: algo.begin_episode(resets)),
            lambda: tf.constant(''))
        stored, sent = [], []
        with tf.control_dependencies([begin]):
            observ = tf.identity(batch_env.observ.read_value())
        for half, indices in enumerate(halves):
            with tf.control_dependencies(sent):
                half_observ = tf.gather(observ, indices)
                action, _ = algo.perform(tf.constant(indices), half_observ)
                token = tf.numpy_function(
                    lambda action, half=half: send(half, action), [action], tf.int32)
            sent.append(token)
            stored.append((indices, half_observ, action, token))
        after = list(sent)
        for half, (indices, half_observ, action, token) in enumerate(stored):
            with tf.control_dependencies(after):
                next_observ, reward, terminated, truncated = tf.numpy_function(
                    lambda token, half=half: receive(half, token), [token],
                    [tf.float32, tf.float32, tf.bool, tf.bool])
                next_observ = tf.reshape(next_observ, half_observ.shape)
                done = terminated | truncated
                writes = [
                    tf.compat.v1.scatter_update(batch_env.observ, indices, next_observ),
                    tf.compat.v1.scatter_update(batch_env.action, indices, action),
                    tf.compat.v1.scatter_update(batch_env.reward, indices, reward),
                    tf.compat.v1.scatter_update(batch_env.done, indices, done),
                    tf.compat.v1.scatter_update(batch_env.terminated, indices, terminated)]
            with tf.control_dependencies(writes):
                summary = algo.experience(
                    tf.constant(indices), half_observ, action, reward, done, next_observ)
            after = [summary]
        with tf.control_dependencies(after):
            ended = tf.cast(tf.where(batch_env.done.read_value())[:, 0], tf.int32)
            return ordered_cond(
                tf.size(ended) > 0, lambda: algo.end_episode(ended), lambda: tf.constant(''))

    def body(index):
        with tf.control_dependencies([index]):
            summary = step()
        with tf.control_dependencies([summary]):
            return index + 1

    return tf.while_loop(
        lambda index: index < STEPS_PER_RUN, body, [0], parallel_iterations=1)


def _then(first, build):
    import tensorflow as tf
    with tf.control_dependencies([first]):
        return build()


def time_collection(config_name, way, runs):
    """Microseconds per batch step of collection as training collects, in a graph of its own."""
    import tensorflow as tf

    from agents import tools
    from agents.scripts import environments
    from agents.scripts import run_api
    config = _config(config_name)
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(0)
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, config.num_agents), 'parallel')
        executor = concurrent.futures.ThreadPoolExecutor(1)
        try:
            algo = config.algorithm(
                batch_env, tf.compat.v1.train.get_or_create_global_step(), tf.constant(True),
                tf.constant(False), config)
            if way == 'simulate':
                op = tools.simulate(batch_env, algo, False, False, steps_per_run=STEPS_PER_RUN)
            else:
                op = _halves_loop(batch_env, algo, executor if way == 'overlapped' else None)
            with tf.compat.v1.Session(config=run_api.session_config()) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                for _ in range(WARMUP_RUNS):
                    sess.run(op)
                start = time.perf_counter()
                for _ in range(runs):
                    sess.run(op)
                return (time.perf_counter() - start) / runs / STEPS_PER_RUN * 1e6
        finally:
            executor.shutdown()
            batch_env.close()


def _processor_name():
    processor = reporting.processor()
    wide = ' with AVX-512' if 'avx512f' in processor['extensions'] else ''
    return processor['model'] + wide


def main():
    """Time each way, alternating, and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default='cheetah')
    parser.add_argument('--runs', type=int, default=40)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--out', default=reporting.probe_results_dir(__file__))
    args = parser.parse_args()
    load = os.getloadavg()
    # The environments alone, back to back, as collection_profile.py times them.
    environments = collection.profile_environments(args.config, 2000)['0']['median']
    rows = []
    for repeat in range(args.repeats):
        row = dict(repeat=repeat)
        for way in WAYS:
            row[way] = time_collection(args.config, way, args.runs)
        rows.append(row)
        print(f'repeat {repeat}: ' + ', '.join(f'{way} {row[way]:.0f} us' for way in WAYS),
              flush=True)
    record = reporting.run_record(load)
    lines = [
        f'`{args.config}` config on the `parallel` backend, collection as training collects '
        f'(sampled actions, transitions stored, no update), {STEPS_PER_RUN} steps per run; '
        f'microseconds per batch step, each way in a graph of its own, alternating.', '',
        '| repeat | `simulate` | two halves in turn | two halves out of phase |',
        '|---:|---:|---:|---:|']
    for row in rows:
        lines.append(f'| {row["repeat"]} | {row["simulate"]:.0f} | ' + ' | '.join(
            f'{row[way]:.0f} ({row[way] / row["simulate"]:.2f}x)' for way in WAYS[1:]) + ' |')
    lines += [
        '', f'The environments alone, from Python: {environments:.0f} us per batch step.', '',
        f'Command: `python -m benchmarks.probes.collection_overlap --config {args.config} '
        f'--runs {args.runs} --repeats {args.repeats}`; processor {_processor_name()}; '
        f'commit {reporting.commit()}; {os.cpu_count()} cores; 1-minute load average '
        f'{load[0]:.1f} before and {record["machine"]["load_after"][0]:.1f} after; '
        f'{record["date"][:16]}.']
    reporting.write_results(
        args.out, args.config, '\n'.join(lines) + '\n',
        dict(rows=rows, environments=environments, record=record))


if __name__ == '__main__':
    main()
