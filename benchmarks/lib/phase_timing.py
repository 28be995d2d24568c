"""Timing training phases of the shipped configs, one run per process.

The benchmarks that compare ways of running the same training (graph
optimizers, XLA, kernels) share this: each run trains a config for a few
phases of one evaluation each in a process of its own, so a setting that
TensorFlow reads once per process applies to that run alone, and the table
puts the first phase (which builds and optimizes the graph) apart from the
later ones.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# Environment steps of one training phase per config: one evaluation each.
PHASE_STEPS = {'pendulum': 5120, 'cartpole': 5120, 'cheetah': 10240}


def parser(description, configs, variants, phases):
    """A command-line parser with the flags every phase-timing benchmark takes.

    Args:
      description: The benchmark's one-line description.
      configs: Default of `--configs`, comma-separated config names.
      variants: Default of `--variants`, comma-separated variant names.
      phases: Default of `--phases`, training phases per run.
    """
    parser_ = argparse.ArgumentParser(description=description)
    parser_.add_argument('--configs', default=configs)
    parser_.add_argument('--variants', default=variants)
    parser_.add_argument('--repeats', type=int, default=2)
    parser_.add_argument('--phases', type=int, default=phases)
    parser_.add_argument('--out', default=None, help='also write the tables to this file')
    parser_.add_argument('--child', default=None, help=argparse.SUPPRESS)
    return parser_


def train_phases(config_name, phases, **overrides):
    """Train `phases` phases of a config with some keys overridden; their seconds.

    Returns:
      List of the training seconds of each phase, evaluations not counted.
    """
    from absl import logging

    from agents.scripts import run_api
    from agents.scripts import train
    logging.set_verbosity(logging.WARNING)
    config = run_api.make_config(config_name)
    steps = PHASE_STEPS[config_name]
    with config.unlocked():
        config.update(seed=0, steps=steps * phases, eval_every=steps, eval_episodes=1)
        config.update(overrides)
    seconds = []
    with tempfile.TemporaryDirectory() as logdir:
        for result in train.train(config, logdir, 'parallel'):
            if result.phase == 'train':
                seconds.append(result.seconds)
    return seconds


def run_child(child_argument, environment=None):
    """Run this program again with `--child child_argument`; the JSON of its last line.

    A script run as a file runs as that file again, a probe run as a module
    (`python -m benchmarks.probes.<probe>`) as that module, from the same
    directory, so the child imports what its parent imported.

    Args:
      child_argument: The value of its `--child` flag.
      environment: Variables to set in the child's environment.
    """
    main = sys.modules['__main__']
    program = (['-m', main.__spec__.name] if getattr(main, '__spec__', None)
               else [os.path.abspath(main.__file__)])
    output = subprocess.run(
        [sys.executable, *program, '--child', child_argument], check=True, capture_output=True,
        text=True, env=dict(os.environ, **(environment or {}))).stdout
    return json.loads(output.strip().splitlines()[-1])


def measure(configs, variants, repeats, phases, environments=None):
    """Time runs of every config and variant, alternating, each in its own process.

    Runs alternate between the variants, so load changes hit every variant
    alike.

    Args:
      configs: Names of the configs.
      variants: Names of the variants.
      repeats: Runs of each config and variant.
      phases: Training phases of each run.
      environments: Dict from variant to the environment variables its runs set.

    Returns:
      Dict from config name to a dict from variant to the list of runs, each
      the list of its phase seconds.
    """
    results = {name: {variant: [] for variant in variants} for name in configs}
    for repeat in range(repeats):
        for config_name in configs:
            for variant in variants:
                seconds = run_child(
                    f'{config_name},{variant},{phases}', (environments or {}).get(variant))
                results[config_name][variant].append(seconds)
                print(f'{config_name} {variant} run {repeat + 1}: first {seconds[0]:.2f} s, '
                      f'later {np.mean(seconds[1:]):.2f} s per phase', flush=True)
    return results


def report(command, started, load_before, phases_table, configs):
    """The text of a phase-timing result: its command, duration, load and table.

    Args:
      command: The command line that made it.
      started: `time.time()` at its start.
      load_before: The load average at its start.
      phases_table: The table of `table()`.
      configs: Names of the configs it trained.
    """
    return '\n'.join([
        f'Command: `{command}`; {time.time() - started:.0f} s; load average '
        f'{load_before:.1f} before, {os.getloadavg()[0]:.1f} after; one run at a time on '
        f'{os.cpu_count()} cores.', '',
        f'A phase is {", ".join(f"{PHASE_STEPS[name]:,} steps of {name}" for name in configs)}; '
        f'the first includes building and optimizing the training graph.', '',
        phases_table])


def publish(text, path=None):
    """Print a result's text and, given a path, write it there too."""
    print(text)
    if path:
        with open(path, 'w') as file_:
            file_.write(text + '\n')


def table(results, variants, phases, baseline, heading):
    """Markdown table of the mean seconds per config and variant, with ratios to the baseline.

    Args:
      results: Dict from config name to a dict from variant to a list of
        runs, each the list of its phase seconds.
      variants: The variants in the order of the rows.
      phases: Number of phases of each run.
      baseline: The variant the ratios divide by.
      heading: Header of the variant column.
    """
    lines = [
        f'| config | {heading} | runs | first phase (s) | later phases (s, mean) | '
        f'training, {phases} phases (s) | vs {baseline} |',
        '|---|---|---:|---:|---:|---:|---:|']
    for config_name, by_variant in results.items():
        totals = {variant: np.mean([sum(run) for run in runs])
                  for variant, runs in by_variant.items()}
        for variant in variants:
            runs = by_variant[variant]
            first = np.mean([run[0] for run in runs])
            later = np.mean([np.mean(run[1:]) for run in runs])
            ratio = totals[variant] / totals[baseline] if baseline in totals else float('nan')
            lines.append(
                f'| {config_name} | {variant} | {len(runs)} | {first:.2f} | {later:.2f} | '
                f'{totals[variant]:.1f} | {ratio:.2f}x |')
    return '\n'.join(lines)


def main(script, description, configs, variants, phases, train_child, heading):
    """The command line of a benchmark that times configs under named variants.

    Parses the flags of `parser`; as a child, prints the JSON of
    `train_child(config_name, variant, phases)`; otherwise measures every
    config and variant, prints the table against the first variant (or the
    first one asked for) and writes it to `--out`.

    Args:
      script: The benchmark's `__file__`.
      description: Its one-line description.
      configs: Default of `--configs`, comma-separated config names.
      variants: Names of the variants; the first is the baseline.
      phases: Default of `--phases`.
      train_child: Callable training one run in the child process.
      heading: Header of the variant column.
    """
    parser_ = parser(description, configs, ','.join(variants), phases)
    args = parser_.parse_args()
    if args.child:
        config_name, variant, child_phases = args.child.split(',')
        print(json.dumps(train_child(config_name, variant, int(child_phases))))
        return
    chosen_configs, chosen = args.configs.split(','), args.variants.split(',')
    unknown = set(chosen) - set(variants) or set(chosen_configs) - set(PHASE_STEPS)
    if unknown:
        parser_.error(f'unknown variants or configs {sorted(unknown)}; variants are '
                      f'{", ".join(variants)}; configs {", ".join(PHASE_STEPS)}.')
    started, load_before = time.time(), os.getloadavg()[0]
    results = measure(chosen_configs, chosen, args.repeats, args.phases)
    baseline = variants[0] if variants[0] in chosen else chosen[0]
    text = report(
        f'python benchmarks/{os.path.basename(script)} --configs {args.configs} --variants '
        f'{args.variants} --repeats {args.repeats} --phases {args.phases}',
        started, load_before,
        table(results, chosen, args.phases, baseline, heading), chosen_configs)
    publish(text, args.out)
