r"""Training speed of the recurrent configs against their feed-forward controls.

Trains each recurrent config (`pendulum_novel`, `cartpole_novel`) and the
feed-forward config of the same task on the same masked observations, one run
at a time, in training phases of `--steps` environment steps each. It reports
the environment steps per second of the training phases after the first
(collection and updates, without evaluation or the first phase's graph
optimization and compilation), the median over rounds, the recurrent run's
share of the feed-forward rate, and the first phase's extra seconds.

    python benchmarks/recurrent_throughput.py [--steps 10240] [--phases 4] [--rounds 3]
"""

import argparse
import json
import os
import tempfile
import time

from lib import reporting
import numpy as np

RESULTS = reporting.results_dir(__file__)

# Each recurrent config, with the feed-forward config it is compared with.
PAIRS = (('pendulum_novel', 'pendulum'), ('cartpole_novel', 'cartpole'))


def training_rate(config_name, steps, phases, mask):
    """A config's training rate after its first phase, and the first phase's extra seconds.

    Returns:
      Tuple of the env steps per second of phases 2 to `phases` of `steps`
      steps each, and the seconds the first phase took beyond that rate.
    """
    from absl import logging

    from agents.scripts import run_api
    from agents.scripts import train
    logging.set_verbosity(logging.WARNING)
    config = run_api.make_config(config_name)
    with config.unlocked():
        # One evaluation after each phase, which is not timed.
        config.update(
            steps=steps * phases, eval_every=steps, eval_episodes=1, observation_mask=mask)
    seconds = []
    with tempfile.TemporaryDirectory() as logdir:
        for result in train.train(config, logdir, 'parallel'):
            if result.phase == 'train' and len(seconds) < phases:
                seconds.append(result.seconds)
    rate = steps * (phases - 1) / sum(seconds[1:])
    return rate, seconds[0] - steps / rate


def main():
    """Run the measurement and write its table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=10_240)
    parser.add_argument('--phases', type=int, default=4)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--out', default=RESULTS)
    args = parser.parse_args()
    from agents.scripts import run_api
    rates = {name: [] for pair in PAIRS for name in pair}
    first = {name: [] for pair in PAIRS for name in pair}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for recurrent, feed_forward in PAIRS:
            mask = run_api.make_config(recurrent).observation_mask
            for name in (recurrent, feed_forward):
                rate, extra = training_rate(name, args.steps, args.phases, mask)
                rates[name].append(rate)
                first[name].append(extra)
                print(f'{name}: {rates[name][-1]:,.0f} env steps/s', flush=True)
        load.append(os.getloadavg()[0])
    lines = [
        f'Training phases 2-{args.phases} of {args.steps:,} env steps each, median of '
        f'{args.rounds} rounds (runs one at a time, `parallel` backend); the first phase\'s '
        'seconds beyond that rate (graph optimization, XLA compilation) beside.', '',
        '| recurrent config | env steps/s | first phase extra | feed-forward control | '
        'env steps/s | first phase extra | ratio |',
        '|---|---:|---:|---|---:|---:|---:|']
    for recurrent, feed_forward in PAIRS:
        ours, control = np.median(rates[recurrent]), np.median(rates[feed_forward])
        lines.append(f'| {recurrent} | {ours:,.0f} | {np.median(first[recurrent]):.1f} s | '
                     f'{feed_forward} (same mask) | {control:,.0f} | '
                     f'{np.median(first[feed_forward]):.1f} s | {ours / control:.2f}x |')
    lines += ['', f'Command: `python benchmarks/recurrent_throughput.py --steps {args.steps} '
              f'--phases {args.phases} --rounds {args.rounds}`; 1-minute load average '
              f'{min(load):.1f}-{max(load):.1f} during the run, on {os.cpu_count()} cores; '
              f'measured {time.strftime("%Y-%m-%d %H:%M")}.']
    text = '\n'.join(lines) + '\n'
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'recurrent_throughput.md'), 'w') as file_:
        file_.write(text)
    with open(os.path.join(args.out, 'recurrent_throughput.json'), 'w') as file_:
        json.dump(dict(rates=rates, first_phase_extra_seconds=first), file_)


if __name__ == '__main__':
    main()
