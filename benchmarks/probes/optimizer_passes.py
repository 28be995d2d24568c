r"""Probe: what does Grappler's second pass cost a short training run?

The scripts' sessions run Grappler's dependency optimizer only
(`run_api.GRAPH_OPTIMIZERS`). TensorFlow's default is two passes of it over
each graph; `run_api.GRAPH_OPTIMIZER_PASSES` makes it one. Grappler runs at the
first `session.run` of each new set of fetches, so a short run (a test, a
tuning trial that is pruned, the start of any run) pays for it several times.
This probe measures, in a process of its own for each setting, alternating:

- `constant`: the first run of a constant fetched from a built training graph
  of the tests' tiny Pendulum config, after its variables are initialized:
  Grappler processes the graph's functions (the update's loops and
  conditions) even when the fetch does not use them;
- `train call`: the CPU seconds of a whole `train.train` call of that config
  (800 steps, five sets of fetches), after a first call that loads everything.

`benchmarks/graph_rewrites.py` measures the same settings on whole phases of
the shipped configs. Findings go to docs/design/update.md#graph-rewrites.

    python -m benchmarks.probes.optimizer_passes [--repeats 3]

Writes optimizer_passes.md and .json to benchmarks/results/probes/
optimizer_passes/ (or --out). Run nothing else meanwhile.
"""

import argparse
import json
import os
import tempfile
import time

import numpy as np

from benchmarks.lib import phase_timing
from benchmarks.lib import reporting

# Setting -> (optimizers, passes) of `agents.scripts.run_api`.
SETTINGS = {
    'dependency, one pass': (('dependency',), 1),
    'dependency, two passes': (('dependency',), 2),
    'no Grappler': ((), 1),
}


def measure(setting):
    """In this process: the first run of a constant, and a train call's CPU, under `setting`."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    from agents import tools  # pylint: disable=import-outside-toplevel
    from agents.scripts import environments  # pylint: disable=import-outside-toplevel
    from agents.scripts import run_api  # pylint: disable=import-outside-toplevel
    from agents.scripts import train  # pylint: disable=import-outside-toplevel

    run_api.GRAPH_OPTIMIZERS, run_api.GRAPH_OPTIMIZER_PASSES = SETTINGS[setting]
    config = run_api.make_config('agents.scripts.train_test:tiny_pendulum')
    list(train.train(config, tempfile.mkdtemp(), 'inprocess'))
    start = time.process_time()
    list(train.train(config, tempfile.mkdtemp(), 'inprocess'))
    train_call = time.process_time() - start
    with tf.Graph().as_default():
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, config.num_agents), 'inprocess')
        run_api.define_simulation_graph(batch_env, config.algorithm, config, tools.Loop(None))
        constant = tf.constant(1.0) + 2.0
        with tf.compat.v1.Session(config=run_api.session_config()) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            start = time.perf_counter()
            sess.run(constant)
            first_constant = time.perf_counter() - start
        batch_env.close()
    return dict(constant=first_constant, train_call=train_call)


def main():
    """Run each setting in its own processes, alternating, and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--out', default=reporting.probe_results_dir(__file__))
    parser.add_argument('--child', default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    load_before = os.getloadavg()
    results = {setting: [] for setting in SETTINGS}
    for _ in range(args.repeats):
        for setting in SETTINGS:
            results[setting].append(phase_timing.run_child(setting))
    record = reporting.run_record(load_before)
    lines = [
        f'Command: `python -m benchmarks.probes.optimizer_passes --repeats {args.repeats}`; '
        f'commit {reporting.commit()}; {reporting.processor()["model"]}; load average '
        f'{record["machine"]["load_before"][0]:.1f} before, '
        f'{record["machine"]["load_after"][0]:.1f} after; one process at a time.', '',
        'The tests\' tiny Pendulum config; medians over the runs, each in its own process.', '',
        '| Grappler | runs | first run of a constant (s) | train call, 800 steps (CPU s) |',
        '|---|---:|---:|---:|']
    for setting, runs in results.items():
        lines.append(
            f'| {setting} | {len(runs)} | {np.median([run["constant"] for run in runs]):.3f} | '
            f'{np.median([run["train_call"] for run in runs]):.2f} |')
    reporting.write_results(
        args.out, 'optimizer_passes', '\n'.join(lines) + '\n', dict(record, results=results))


if __name__ == '__main__':
    main()
