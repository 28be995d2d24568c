r"""Does BatchPPO solve its tasks within their step budgets? Run by hand.

Trains a configuration with `agents.scripts.train` and reports the evaluation
score over environment steps and wall time, and when it first reached the
target:

    python benchmarks/learning.py --config=pendulum   # target: eval score >= -250
    python benchmarks/learning.py --config=cartpole   # target: eval score >= 475

Both use the whole step budget of their configuration (`steps` training steps
plus the evaluation phases in between).
"""

import argparse
import tempfile
import time

from absl import logging

from agents.scripts import train
from agents.scripts import utility

TARGETS = {'pendulum': -250.0, 'cartpole': 475.0}


def run(config_name, logdir, backend, seed):
    """Train and return rows of (global step, phase, score, seconds)."""
    config = utility.make_config(config_name)
    with config.unlocked():
        config.seed = seed
    utility.save_config(config, logdir)
    train_steps = config.update_every * config.max_length
    eval_steps = config.eval_episodes * config.max_length
    start = time.time()
    rows = []
    for index, score in enumerate(train.train(config, logdir, backend)):
        # Phases alternate, train first, each reporting once at its end.
        cycle, is_eval = divmod(index, 2)
        step = (cycle + 1) * train_steps + cycle * eval_steps + (eval_steps if is_eval else 0)
        rows.append((step, 'eval' if is_eval else 'train', float(score), time.time() - start))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default='pendulum', choices=sorted(TARGETS))
    parser.add_argument('--backend', default='inprocess')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--logdir', default=None)
    args = parser.parse_args()
    logging.set_verbosity(logging.WARNING)
    logdir = args.logdir or tempfile.mkdtemp(prefix=f'learning-{args.config}-')
    rows = run(args.config, logdir, args.backend, args.seed)
    target = TARGETS[args.config]
    print(f'\n{args.config}, seed {args.seed}, {args.backend} backend, run in {logdir}\n')
    print('| global step | eval score | wall time (s) |')
    print('|---:|---:|---:|')
    evals = [row for row in rows if row[1] == 'eval']
    for step, _, score, seconds in evals[::max(1, len(evals) // 20)] + evals[-1:]:
        print(f'| {step:,} | {score:.1f} | {seconds:.0f} |')
    reached = next((row for row in evals if row[2] >= target), None)
    if reached:
        print(f'\nReached the target {target} at global step {reached[0]:,} after '
              f'{reached[3]:.0f} s; final eval score {evals[-1][2]:.1f}.')
    else:
        print(f'\nDid not reach the target {target}; final eval score {evals[-1][2]:.1f}.')
    print(f'Command: python benchmarks/learning.py --config={args.config} '
          f'--backend={args.backend} --seed={args.seed}')


if __name__ == '__main__':
    main()
