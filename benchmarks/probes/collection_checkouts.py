r"""Probe: does a change make the training graph's collection step cheaper?

`benchmarks/collection_profile.py` takes one checkout's batch step apart; a
change to the graph's operations moves it by less than the host drifts
between two invocations. This probe measures two or more checkouts of this
repository (directories such as `git worktree add DIR COMMIT` makes) by
turns, each measurement in a process of its own that imports its
checkout's `agents`, with a config's environments (`cheetah` unless --config
says otherwise) on the `parallel` backend, or `inprocess`, whose steps vary
less from run to run, for the graph's own cost; 16 steps per `session.run`:

- `acting`: the policy's mode, no learning, as evaluation collects;
- `training`: samples, normalizer updates and stores, as training collects.
  Runs that hold an update (one in `rollout_length / 16`) are slower by far,
  so the median over runs is the step without one.

For each it gives the operations per batch step (from one traced run) and
the median microseconds per batch step (untraced).

    python -m benchmarks.probes.collection_checkouts --checkouts OLD,NEW
        [--config cheetah] [--backend parallel] [--rounds 3]

Writes CONFIG.md and .json (CONFIG_BACKEND for another backend) to
benchmarks/results/probes/collection_checkouts/ (or --out). Findings go to
docs/design/collection.md. Run nothing else meanwhile.
"""

import argparse
import os
import statistics
import sys

from benchmarks.lib import collection
from benchmarks.lib import reporting

STEPS_PER_RUN = collection.STEPS_PER_RUN
MODES = ('acting', 'training')


def main():
    """Measure every checkout and mode by turns, each in a process; write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--checkouts', help='Comma-separated directories, the first the baseline.')
    parser.add_argument('--config', default='cheetah')
    parser.add_argument('--backend', default='parallel', choices=('parallel', 'inprocess'))
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--out', default=reporting.probe_results_dir(__file__))
    args = parser.parse_args()
    checkouts = [os.path.abspath(path) for path in (args.checkouts or '').split(',') if path]
    missing = [path for path in checkouts if not os.path.isdir(os.path.join(path, 'agents'))]
    if len(checkouts) < 2 or missing:
        parser.error(
            f'--checkouts needs two or more directories that hold this repository; '
            f'{", ".join(missing) or args.checkouts!r} does not.')
    load = os.getloadavg()
    commits = [reporting.commit(path) for path in checkouts]
    results = {f'{commit},{mode}': [] for commit in commits for mode in MODES}
    for round_ in range(args.rounds):
        for mode in MODES:
            for path, commit in zip(checkouts, commits):
                run = collection.measure_in_checkout(path, args.config, args.backend, mode)
                results[f'{commit},{mode}'].append(run)
                print(f'round {round_} {commit} {mode}: {run}', flush=True)
    record = reporting.probe_record(load, checkouts=commits)
    name = args.config + ('' if args.backend == 'parallel' else f'_{args.backend}')
    reporting.write_results(
        args.out, name, _table(args, commits, results, record),
        dict(results=results, **record))
    return 0


def _table(args, commits, results, record):
    lines = [
        f'`{args.config}` config, {len(commits)} checkouts by turns, {args.rounds} rounds, '
        f'each measurement in a process of its own; the `{args.backend}` backend, '
        f'{STEPS_PER_RUN} steps per run; microseconds per batch step are medians over '
        'runs, then over rounds.', '',
        '| checkout | collecting | operations per batch step | us per batch step '
        '| each round | vs the first |',
        '|---|---|---:|---:|---|---:|']
    for mode in MODES:
        baseline = statistics.median(run['batch_step'] for run in results[f'{commits[0]},{mode}'])
        for commit in commits:
            runs = results[f'{commit},{mode}']
            cells = reporting.rounds_cells([run['batch_step'] for run in runs], baseline)
            lines.append(f'| {commit} | {mode} | {runs[0]["operations"]:.0f} | {cells} |')
    lines += ['', reporting.command_line(
        f'python -m benchmarks.probes.collection_checkouts --checkouts OLD,NEW '
        f'--config {args.config} --backend {args.backend} --rounds {args.rounds}', record)]
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
