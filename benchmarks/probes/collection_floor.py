r"""Probe: where does the in-graph floor's time go beyond the environments' own step?

`benchmarks/collection_profile.py` measures the floor of stepping inside the
graph, a graph loop that does nothing but step the environments, at about
twice the time of the same batch step from Python. A native step op could
save only the part of that difference that is the call into Python and the
loop; the rest belongs to the environments' step itself, as the workers see
it. This probe separates the two, on the `parallel` backend with a config's
environments (`cheetah` unless --config says otherwise), each measurement in
a process of its own, alternating:

- `python`: `ParallelBatchEnv.step` back to back from Python, zero actions;
- `graph`: the floor, `InGraphBatchEnv.simulate` in a `tf.while_loop` of 16
  steps, zero actions, in a session with `run_api.session_config()`; besides
  the time per batch step, it times each call of the batch's `step` inside
  the loop and the gap between one call's end and the next one's start (the
  call into Python, checks of the results, stores and the loop);
- `empty`: the same loop with a `tf.numpy_function` that returns arrays of
  the right shapes at once: the floor without environments;

with the workers' `spin_seconds` at the default and at 1 ms, so that a worker
that has answered polls through the gap instead of sleeping.

    python -m benchmarks.probes.collection_floor [--config cheetah] [--repeats 3]

Writes CONFIG.md and .json to benchmarks/results/probes/collection_floor/
(or --out). Findings go to docs/design/collection.md. Run nothing else
meanwhile.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from benchmarks.lib import collection
from benchmarks.lib import phase_timing
from benchmarks.lib import reporting

STEPS_PER_RUN = collection.STEPS_PER_RUN
WAYS = ('python', 'graph', 'empty')
SPINS = (200e-6, 1e-3)


class _TimedSteps:
    """A batch environment whose `step` calls keep their start and end times."""

    def __init__(self, batch_env):
        self._env = batch_env
        self.calls = []

    def __len__(self):
        return len(self._env)

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, actions):
        start = time.perf_counter()
        result = self._env.step(actions)
        self.calls.append((start, time.perf_counter()))
        return result


def _batch_env(config_name, spin_seconds):
    from agents.scripts import environments
    from agents.scripts import run_api
    from agents.tools import envs
    config = run_api.make_config(config_name)
    return envs.make_batch_env(
        'parallel', environments.environment_constructors(config, config.num_agents),
        return_infos=False, spin_seconds=spin_seconds)


def time_python(config_name, spin_seconds, steps=3000):
    """Microseconds per batch step from Python, back to back."""
    batch_env = _batch_env(config_name, spin_seconds)
    try:
        actions = np.zeros((len(batch_env),) + batch_env.action_space.shape, np.float32)
        batch_env.reset()
        start = time.perf_counter()
        for _ in range(steps):
            _, _, terminated, truncated = batch_env.step(actions)[:4]
            done = np.flatnonzero(terminated | truncated)
            if done.size:
                batch_env.reset(done)
        return dict(batch_step=(time.perf_counter() - start) / steps * 1e6)
    finally:
        batch_env.close()


def time_graph(config_name, spin_seconds, empty, runs=150):
    """Microseconds per batch step of the floor loop, and of its calls and gaps."""
    import tensorflow as tf

    from agents import tools
    from agents.scripts import run_api
    timed = _TimedSteps(_batch_env(config_name, spin_seconds))
    try:
        with tf.Graph().as_default():
            batch_env = tools.InGraphBatchEnv(timed)
            loop = (_empty_loop(batch_env) if empty
                    else collection.stepping_loop(batch_env))
            with tf.compat.v1.Session(config=run_api.session_config()) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                sess.run(batch_env.reset())
                for _ in range(10):
                    sess.run(loop)
                timed.calls.clear()
                start = time.perf_counter()
                for _ in range(runs):
                    sess.run(loop)
                seconds = time.perf_counter() - start
    finally:
        timed.close()
    result = dict(batch_step=seconds / runs / STEPS_PER_RUN * 1e6)
    if timed.calls:
        calls = np.array(timed.calls)
        result['inside_step'] = float(np.median(calls[:, 1] - calls[:, 0])) * 1e6
        result['gap'] = float(np.median(calls[1:, 0] - calls[:-1, 1])) * 1e6
    return result


def _empty_loop(batch_env):
    """The floor's loop with a call into Python that returns at once."""
    import tensorflow as tf
    batch = len(batch_env)
    observ = np.zeros(batch_env.observ.shape, batch_env.observ.dtype.as_numpy_dtype)
    reward, flags = np.zeros(batch, np.float32), np.zeros(batch, bool)
    return collection.repeated(lambda: tf.numpy_function(
        lambda action: (observ, reward, flags, flags), [batch_env.action],
        [batch_env.observ.dtype, tf.float32, tf.bool, tf.bool]))


def _child(argument):
    config_name, way, spin_seconds = argument.split(',')
    spin_seconds = float(spin_seconds)
    if way == 'python':
        result = time_python(config_name, spin_seconds)
    else:
        result = time_graph(config_name, spin_seconds, empty=way == 'empty')
    print(json.dumps(result))


def main():
    """Time each way and spin, alternating, each in a process; write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default='cheetah')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--out', default=reporting.probe_results_dir(__file__))
    parser.add_argument('--child', default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.child)
    load = os.getloadavg()
    results = {f'{way},{spin}': [] for spin in SPINS for way in WAYS}
    for repeat in range(args.repeats):
        for key, runs in results.items():
            runs.append(phase_timing.run_child(f'{args.config},{key}'))
            print(f'repeat {repeat} {key}: {runs[-1]}', flush=True)
    record = reporting.probe_record(load)
    reporting.write_results(
        args.out, args.config, _table(args, results, record), dict(results=results, **record))
    return 0


def _table(args, results, record):
    def median(key, field):
        values = [run[field] for run in results[key] if field in run]
        return f'{np.median(values):.0f}' if values else '-'

    lines = [
        f'`{args.config}` config on the `parallel` backend, zero actions, '
        f'{STEPS_PER_RUN} steps per run in the graph; medians of {args.repeats} runs of each, '
        'alternating, each in a process of its own; microseconds.', '',
        '| way | workers poll for | per batch step | inside the batch\'s `step` '
        '| gap between calls |',
        '|---|---:|---:|---:|---:|']
    names = dict(python='from Python, back to back', graph='the floor: a graph loop',
                 empty='the loop with an empty call into Python')
    for spin in SPINS:
        for way in WAYS:
            key = f'{way},{spin}'
            lines.append(
                f'| {names[way]} | {spin * 1e6:.0f} us | {median(key, "batch_step")} | '
                f'{median(key, "inside_step")} | {median(key, "gap")} |')
    lines += ['', reporting.command_line(
        f'python -m benchmarks.probes.collection_floor --config {args.config} '
        f'--repeats {args.repeats}', record)]
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
