"""Stepping speed of two checkouts of this repository, in alternating runs.

On a shared host the `parallel` backend's speed moves from run to run by more
than most changes to it (see docs/design/parallel.md), so one run before
and one after a change say little. This runs `env_throughput.py` of each
checkout by turns, round after round, each run measuring the default
`ParallelBatchEnv` against Gymnasium's SyncVectorEnv in the same process, and
tabulates per round the microseconds per batch step and the ratio to
SyncVectorEnv, with their medians. A checkout is any directory holding this
repository at some commit, such as one made with `git worktree add DIR COMMIT`;
each run imports the `agents` package of its own checkout.

Usage:
  python benchmarks/checkout_ab.py --checkouts OLD_DIR,NEW_DIR
      [--envs Pendulum-v1:32,HalfCheetah-v5:16] [--rounds 6] [--duration 1.0]
      [--repeats 3]

Writes checkout_ab.json and .md to benchmarks/results/checkout_ab/ (or --outdir).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from lib import reporting

DEFAULT = 'ParallelBatchEnv (default)'
SYNC = 'gymnasium SyncVectorEnv'


def run_checkout(checkout, env_id, size, duration, repeats):
    """Measure the default backend and SyncVectorEnv with one checkout's code.

    Returns:
      Pair of the default's and SyncVectorEnv's microseconds per batch step.
    """
    with tempfile.TemporaryDirectory() as outdir:
        subprocess.run(
            [sys.executable, os.path.join(checkout, 'benchmarks', 'env_throughput.py'),
             '--envs', env_id, '--sizes', str(size), '--backends', 'SyncVector',
             '--duration', str(duration), '--repeats', str(repeats), '--outdir', outdir],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, 'PYTHONPATH': checkout})
        with open(os.path.join(outdir, 'env_throughput.json')) as file:
            steps_per_second = json.load(file)['env_steps_per_second'][env_id][str(size)]
    return tuple(size / steps_per_second[name] * 1e6 for name in (DEFAULT, SYNC))


def markdown_table(env_id, size, names, rounds):
    """A table of every round's batch step and ratio per checkout, and their medians."""
    header = ' | '.join(f'{name}: us, ratio' for name in names)
    lines = [f'### {env_id}, N={size}', '', f'| round | {header} |',
             '|---|' + '---|' * len(names)]
    for index, measured in enumerate(rounds):
        cells = ' | '.join(
            f'{default:.0f}, {sync / default:.2f}x' for default, sync in measured)
        lines.append(f'| {index + 1} | {cells} |')
    medians = ' | '.join(
        f'{statistics.median(run[column][0] for run in rounds):.0f}, '
        f'{statistics.median(run[column][1] / run[column][0] for run in rounds):.2f}x'
        for column in range(len(names)))
    lines.append(f'| median | {medians} |')
    return '\n'.join(lines)


def _checkouts(text):
    checkouts = text.split(',')
    for checkout in checkouts:
        if not os.path.isfile(os.path.join(checkout, 'benchmarks', 'env_throughput.py')):
            raise argparse.ArgumentTypeError(
                f'{checkout!r} holds no benchmarks/env_throughput.py; pass checkouts of this '
                f'repository, such as those `git worktree add DIR COMMIT` makes')
    return checkouts


def main():
    """Run the rounds the command line asks for and write their results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--checkouts', type=_checkouts, required=True,
                        help='comma-separated directories, each a checkout of this repository')
    parser.add_argument('--envs', type=reporting.batch_tasks,
                        default='Pendulum-v1:32,HalfCheetah-v5:16',
                        help='comma-separated ENV_ID:SIZE tasks')
    parser.add_argument('--rounds', type=int, default=6)
    parser.add_argument('--duration', type=float, default=1.0,
                        help='seconds per measurement turn')
    parser.add_argument('--repeats', type=int, default=3, help='measurement turns per run')
    parser.add_argument('--outdir', default=reporting.results_dir(__file__))
    args = parser.parse_args()
    names = [os.path.basename(os.path.normpath(checkout)) for checkout in args.checkouts]
    load_before = os.getloadavg()
    results = {}
    for env_id, size in args.envs:
        rounds = results[f'{env_id}:{size}'] = []
        for index in range(args.rounds):
            print(f'{env_id} N={size}, round {index + 1} of {args.rounds} ...',
                  file=sys.stderr, flush=True)
            rounds.append([
                run_checkout(checkout, env_id, size, args.duration, args.repeats)
                for checkout in args.checkouts])
    report = [
        f'Command: {reporting.command_text(__file__)}',
        f'{os.cpu_count()} cores, load average before {load_before[0]:.2f}, after '
        f'{os.getloadavg()[0]:.2f}. Each cell: microseconds per batch step of {DEFAULT}, '
        f'best of {args.repeats} turns of {args.duration} s, and its speed-up over '
        f'{SYNC} in the same run.', '']
    for env_id, size in args.envs:
        report += [markdown_table(env_id, size, names, results[f'{env_id}:{size}']), '']
    print('\n'.join(report))
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, 'checkout_ab.json'), 'w') as file:
        json.dump({
            **reporting.run_record(load_before), 'checkouts': args.checkouts,
            'microseconds_default_and_sync': results}, file, indent=2)
    with open(os.path.join(args.outdir, 'checkout_ab.md'), 'w') as file:
        file.write('\n'.join(report) + '\n')
    print(f'Wrote checkout_ab.json and .md to {args.outdir}', file=sys.stderr)


if __name__ == '__main__':
    main()
