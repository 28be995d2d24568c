r"""Training speed of the recurrent configs against their feed-forward controls.

Trains each recurrent config (`pendulum_novel`, `cartpole_novel`) and the
feed-forward config of the same task on the same masked observations, one run
at a time, and reports the environment steps per second of the training
phase (collection and updates, without evaluation), the median over rounds,
and the recurrent run's share of the feed-forward rate.

    python benchmarks/recurrent_throughput.py [--steps 30000] [--rounds 3]
"""

import argparse
import json
import os
import tempfile
import time

import numpy as np
import reporting

RESULTS = reporting.results_dir(__file__)

# Each recurrent config, with the feed-forward config it is compared with.
PAIRS = (('pendulum_novel', 'pendulum'), ('cartpole_novel', 'cartpole'))


def training_rate(config_name, steps, mask):
    """Environment steps per second of a config's training phase, over `steps` steps."""
    from absl import logging

    from agents.scripts import train
    from agents.scripts import utility
    logging.set_verbosity(logging.WARNING)
    config = utility.make_config(config_name)
    with config.unlocked():
        # One evaluation at the end, which is not timed.
        config.update(steps=steps, eval_every=steps, eval_episodes=1, observation_mask=mask)
    seconds = 0.0
    with tempfile.TemporaryDirectory() as logdir:
        for result in train.train(config, logdir, 'parallel'):
            if result.phase == 'train':
                seconds += result.seconds
    return steps / seconds


def main():
    """Run the measurement and write its table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=30_000)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--out', default=RESULTS)
    args = parser.parse_args()
    from agents.scripts import utility
    rates = {name: [] for pair in PAIRS for name in pair}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for recurrent, feed_forward in PAIRS:
            mask = utility.make_config(recurrent).observation_mask
            for name in (recurrent, feed_forward):
                rates[name].append(training_rate(name, args.steps, mask))
                print(f'{name}: {rates[name][-1]:,.0f} env steps/s', flush=True)
        load.append(os.getloadavg()[0])
    lines = [
        f'Training phase, {args.steps:,} env steps per run, median of {args.rounds} rounds '
        '(runs one at a time, `parallel` backend).', '',
        '| recurrent config | env steps/s | feed-forward control | env steps/s | ratio |',
        '|---|---:|---|---:|---:|']
    for recurrent, feed_forward in PAIRS:
        ours, control = np.median(rates[recurrent]), np.median(rates[feed_forward])
        lines.append(f'| {recurrent} | {ours:,.0f} | {feed_forward} (same mask) | '
                     f'{control:,.0f} | {ours / control:.2f}x |')
    lines += ['', f'Command: `python benchmarks/recurrent_throughput.py --steps {args.steps} '
              f'--rounds {args.rounds}`; 1-minute load average '
              f'{min(load):.1f}-{max(load):.1f} during the run, on {os.cpu_count()} cores; '
              f'measured {time.strftime("%Y-%m-%d %H:%M")}.']
    text = '\n'.join(lines) + '\n'
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'recurrent_throughput.md'), 'w') as file_:
        file_.write(text)
    with open(os.path.join(args.out, 'recurrent_throughput.json'), 'w') as file_:
        json.dump(rates, file_)


if __name__ == '__main__':
    main()
