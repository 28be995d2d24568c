r"""Training time under different sets of Grappler graph optimizers.

TensorFlow optimizes a graph (Grappler) at the first `session.run` of each
fetch, so the first phase of training pays for it, and the optimized graph
decides the cost of every later step. This benchmark trains the shipped
configs with each set of optimizers and reports the first training phase,
the mean of the later ones, and the whole training time (evaluations not
counted), against TensorFlow's default set measured in the same invocation.

Sets (`--variants`):
  default      TensorFlow's default optimizers (`GRAPH_OPTIMIZERS = None`).
  dependency   Dependency optimization only: what the scripts run
               (`agents.scripts.utility.GRAPH_OPTIMIZERS`).
  none         No graph optimization at all.

Each run is its own process; runs alternate between the sets, so load
changes hit every set alike. Usage:

    python benchmarks/graph_rewrites.py [--configs pendulum,cartpole,cheetah]
        [--variants default,dependency,none] [--repeats 2] [--phases 6]
        [--out benchmarks/results/graph_rewrites.md]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VARIANTS = {'default': None, 'dependency': ('dependency',), 'none': ()}
# Environment steps of one training phase per config: one evaluation each.
PHASE_STEPS = {'pendulum': 5120, 'cartpole': 5120, 'cheetah': 10240}


def train_once(config_name, variant, phases):
    """Train `phases` phases of a config with a set of optimizers; their seconds."""
    from absl import logging

    from agents.scripts import train
    from agents.scripts import utility
    logging.set_verbosity(logging.WARNING)
    utility.GRAPH_OPTIMIZERS = VARIANTS[variant]
    config = utility.make_config(config_name)
    steps = PHASE_STEPS[config_name]
    with config.unlocked():
        config.update(seed=0, steps=steps * phases, eval_every=steps, eval_episodes=1)
    seconds = []
    with tempfile.TemporaryDirectory() as logdir:
        for result in train.train(config, logdir, 'parallel'):
            if result.phase == 'train':
                seconds.append(result.seconds)
    return seconds


def run_child(config_name, variant, phases):
    """Run `train_once` in a new process; its phase seconds."""
    output = subprocess.run(
        [sys.executable, __file__, '--child', f'{config_name},{variant},{phases}'],
        check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def table(results, variants, phases):
    """Markdown table of the mean seconds per config and set, with ratios to the default set."""
    lines = [
        f'| config | optimizers | runs | first phase (s) | later phases (s, mean) | '
        f'training, {phases} phases (s) | vs default |',
        '|---|---|---:|---:|---:|---:|---:|']
    for config_name, by_variant in results.items():
        totals = {variant: np.mean([sum(run) for run in runs])
                  for variant, runs in by_variant.items()}
        for variant in variants:
            runs = by_variant[variant]
            first = np.mean([run[0] for run in runs])
            later = np.mean([np.mean(run[1:]) for run in runs])
            ratio = totals[variant] / totals['default'] if 'default' in totals else float('nan')
            lines.append(
                f'| {config_name} | {variant} | {len(runs)} | {first:.2f} | {later:.2f} | '
                f'{totals[variant]:.1f} | {ratio:.2f}x |')
    return '\n'.join(lines)


def main():
    """Run the benchmark as the command line asks and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--configs', default='pendulum,cartpole,cheetah')
    parser.add_argument('--variants', default='default,dependency,none')
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--phases', type=int, default=6)
    parser.add_argument('--out', default=None, help='also write the table to this file')
    parser.add_argument('--child', default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        config_name, variant, phases = args.child.split(',')
        print(json.dumps(train_once(config_name, variant, int(phases))))
        return
    configs, variants = args.configs.split(','), args.variants.split(',')
    unknown = set(variants) - set(VARIANTS) or set(configs) - set(PHASE_STEPS)
    if unknown:
        parser.error(f'unknown configs or variants {sorted(unknown)}; variants are '
                     f'{", ".join(VARIANTS)}, configs {", ".join(PHASE_STEPS)}.')
    start, load_before = time.time(), os.getloadavg()[0]
    results = {name: {variant: [] for variant in variants} for name in configs}
    for repeat in range(args.repeats):
        for config_name in configs:
            for variant in variants:
                seconds = run_child(config_name, variant, args.phases)
                results[config_name][variant].append(seconds)
                print(f'{config_name} {variant} run {repeat + 1}: first {seconds[0]:.2f} s, '
                      f'later {np.mean(seconds[1:]):.2f} s per phase', flush=True)
    text = '\n'.join([
        f'Command: `python benchmarks/graph_rewrites.py --configs {args.configs} '
        f'--variants {args.variants} --repeats {args.repeats} --phases {args.phases}`; '
        f'{time.time() - start:.0f} s; load average {load_before:.1f} before, '
        f'{os.getloadavg()[0]:.1f} after; one run at a time on {os.cpu_count()} cores.', '',
        f'A phase is {", ".join(f"{PHASE_STEPS[name]:,} steps of {name}" for name in configs)}; '
        f'the first includes the graph optimization of the training graph.', '',
        table(results, variants, args.phases)])
    print(text)
    if args.out:
        with open(args.out, 'w') as file_:
            file_.write(text + '\n')


if __name__ == '__main__':
    main()
