r"""Probe: does a session option make the collection step cheaper?

A collection step runs hundreds of small operations, so how the session
optimizes and executes the graph could matter as much as the operations
themselves. This probe builds a config's collection step (`cheetah` unless
--config says otherwise; the `parallel` backend, or `inprocess`) in a
session with `run_api.session_config()`, the scripts' options, and with one
option changed from there:

- `pruned`: place and optimize only the part of the graph each set of
  fetches runs (`graph_options.place_pruned_graph`);
- `no_spinning`: TensorFlow's threads sleep at once when idle instead of
  spinning first (`experimental.disable_thread_spinning`), leaving the
  cores to the environment workers;
- `single_threaded`: the single-threaded executor, which runs operations
  one after another on the calling thread (`experimental.executor_type`);
- `functional`: conditionals and loops stay function calls instead of
  being lowered to switches and merges
  (`experimental.disable_functional_ops_lowering`).

Each measurement runs in a process of its own, the options by turns, round
after round. It gives the seconds of the first run of the step (which
optimizes and instantiates the graph) and, acting and training as
`collection_checkouts.py` measures them, the operations executed per batch
step (one traced run) and the median microseconds per batch step.

    python -m benchmarks.probes.session_options [--config cheetah]
        [--backend parallel] [--options scripts,pruned,...] [--rounds 3]

Writes CONFIG.md and .json (CONFIG_BACKEND for another backend) to
benchmarks/results/probes/session_options/ (or --out). Findings go to
docs/design/collection.md. Run nothing else meanwhile.
"""

import argparse
import json
import os
import statistics
import sys

from benchmarks.lib import collection
from benchmarks.lib import phase_timing
from benchmarks.lib import reporting

MODES = ('acting', 'training')
# Option -> what it sets in the `ConfigProto`: (group, field, value) triples.
OPTIONS = {
    'scripts': (),
    'pruned': (('graph_options', 'place_pruned_graph', True),),
    'no_spinning': (('experimental', 'disable_thread_spinning', True),),
    'single_threaded': (('experimental', 'executor_type', 'SINGLE_THREADED_EXECUTOR'),),
    'functional': (('experimental', 'disable_functional_ops_lowering', True),),
}
# Options under which a traced run does not show the operations inside loops
# and conditionals, so its count of operations means nothing.
UNTRACED = ('single_threaded', 'functional')


def session_config(option):
    """The scripts' session options with one option changed."""
    from agents.scripts import run_api
    config = run_api.session_config()
    for group, name, value in OPTIONS[option]:
        setattr(getattr(config, group), name, value)
    return config


def _child(argument):
    config_name, backend, option = argument.split(',')
    print(json.dumps(collection.measure_collection(
        config_name, backend, MODES, session_config(option))))


def main():
    """Measure every option by turns, each in a process; write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default='cheetah')
    parser.add_argument('--backend', default='parallel', choices=('parallel', 'inprocess'))
    parser.add_argument('--options', default=','.join(OPTIONS))
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--out', default=reporting.probe_results_dir(__file__))
    parser.add_argument('--child', default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.child)
    options = reporting.baseline_first(parser, 'options', args.options, OPTIONS)
    load = os.getloadavg()
    results = reporting.by_turns(options, args.rounds, lambda option: phase_timing.run_child(
        f'{args.config},{args.backend},{option}'))
    record = reporting.probe_record(load)
    name = args.config + ('' if args.backend == 'parallel' else f'_{args.backend}')
    reporting.write_results(
        args.out, name, _table(args, results, record), dict(results=results, **record))
    return 0


def _table(args, results, record):
    lines = [
        f'`{args.config}` config, {args.rounds} rounds, the options by turns, each '
        f'measurement in a process of its own; the `{args.backend}` backend, '
        f'{collection.STEPS_PER_RUN} steps per run; seconds and microseconds are '
        'medians over rounds (microseconds over runs first).', '',
        '| session options | first run (s) | collecting | operations per batch step '
        '| us per batch step | each round | vs the scripts\' |',
        '|---|---:|---|---:|---:|---|---:|']
    for mode in MODES:
        baseline = statistics.median(run[mode]['batch_step'] for run in results['scripts'])
        for option, runs in results.items():
            first = statistics.median(run['first_run'] for run in runs)
            operations = (
                'not traced' if option in UNTRACED else f'{runs[0][mode]["operations"]:.0f}')
            cells = reporting.rounds_cells([run[mode]['batch_step'] for run in runs], baseline)
            lines.append(f'| {option} | {first:.2f} | {mode} | {operations} | {cells} |')
    lines += ['', reporting.command_line(
        f'python -m benchmarks.probes.session_options --config {args.config} '
        f'--backend {args.backend} --options {args.options} --rounds {args.rounds}', record)]
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
