r"""Probe: does an XLA CPU flag make PPO's compiled update faster?

On the zoo's HalfCheetah schedule the update takes most of a whole run
(`mujoco_throughput.py`). While it runs, the environments' workers wait, so
both cores are the update's, but a gradient step's products of 64 rows are
small to spread over two. XLA's CPU compiler has flags that could change
how much of the second core the update uses:

- `concurrency_scheduler`: order the compiled program so that independent
  parts can run at once (`--xla_cpu_enable_concurrency_optimized_scheduler`);
- `xnnpack`: products and fusions through XNNPACK's kernels
  (`--xla_cpu_use_xnnpack`);
- `single_threaded_eigen`: Eigen's products on the calling thread only
  (`--xla_cpu_multi_thread_eigen=false`), to see what the second core gives.

Each measurement is a `mujoco_throughput.py --no-sb3` run in a process of its
own, with the flag added to the scripts' own XLA flags, the flags by turns,
round after round. It gives the update's microseconds per gradient step (the
training time less the collection's, measured apart) and the whole training
rate.

    python -m benchmarks.probes.xla_flags [--steps 100000]
        [--flags scripts,concurrency_scheduler,...] [--rounds 2]

Writes cheetah.md and .json to benchmarks/results/probes/xla_flags/ (or
--out). Findings go to docs/design/update.md. Run nothing else meanwhile.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks.lib import reporting
from benchmarks.lib import zoo_schedule

# Name -> what it adds to XLA_FLAGS.
FLAGS = {
    'scripts': '',
    'concurrency_scheduler': '--xla_cpu_enable_concurrency_optimized_scheduler=true',
    'xnnpack': '--xla_cpu_use_xnnpack=true',
    'single_threaded_eigen': '--xla_cpu_multi_thread_eigen=false',
}


def measure(flags, steps):
    """One run of our trainer with `flags` in XLA_FLAGS: update and training figures."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          'mujoco_throughput.py')
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, script, f'--steps={steps}', f'--eval_every={steps}', '--no-sb3',
             f'--out={out}'], check=True, capture_output=True,
            env=dict(os.environ, XLA_FLAGS=flags))
        with open(os.path.join(out, 'mujoco_throughput.json')) as file_:
            result = json.load(file_)
    agents = result['agents']
    update = zoo_schedule.update_seconds(steps, agents, result['collection_rate'])
    return dict(
        update_us=update / zoo_schedule.gradient_steps(steps) * 1e6,
        steps_per_second=steps / agents['seconds'], peak_gflops=agents['peak_gflops'])


def main():
    """Measure every flag by turns, each run in a process; write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=100_000)
    parser.add_argument('--flags', default=','.join(FLAGS))
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--out', default=reporting.probe_results_dir(__file__))
    args = parser.parse_args()
    names = reporting.baseline_first(parser, 'flags', args.flags, FLAGS)
    load = os.getloadavg()
    results = reporting.by_turns(
        names, args.rounds, lambda name: measure(FLAGS[name], args.steps))
    record = reporting.probe_record(load)
    reporting.write_results(
        args.out, 'cheetah', _table(args, results, record), dict(results=results, **record))
    return 0


def _table(args, results, record):
    lines = [
        f'`cheetah` on the zoo\'s schedule (mujoco_throughput.py), '
        f'{args.steps:,} training steps a run, {args.rounds} rounds, the flags by turns, '
        'each run in a process of its own; medians over rounds.', '',
        '| flag | added to XLA_FLAGS | update, us per gradient step | each round '
        '| vs the scripts\' | training env steps/s |',
        '|---|---|---:|---|---:|---:|']
    baseline = statistics.median(run['update_us'] for run in results['scripts'])
    for name, runs in results.items():
        cells = reporting.rounds_cells([run['update_us'] for run in runs], baseline)
        rate = statistics.median(run['steps_per_second'] for run in runs)
        added = f'`{FLAGS[name]}`' if FLAGS[name] else 'nothing'
        lines.append(f'| {name} | {added} | {cells} | {rate:,.0f} |')
    peak = statistics.median(run['peak_gflops'] for runs in results.values() for run in runs)
    lines += [
        '', f'The machine\'s FP32 matmul peak, median of the runs: {peak:.0f} GFLOP/s.', '',
        reporting.command_line(
            f'python -m benchmarks.probes.xla_flags --steps {args.steps} '
            f'--flags {args.flags} --rounds {args.rounds}', record)]
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
