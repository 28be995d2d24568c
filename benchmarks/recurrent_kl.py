r"""The KL divergence of recurrent updates, in this checkout against another.

Trains the same recurrent config, a GRU policy on whole Pendulum-v1 episodes
cut into chunks of 50 steps, in two checkouts of the project, and plots
TensorBoard's `training/kl` (the mean KL divergence of the update steps from
the policy that acted) against training steps for both. An update that
replays from the wrong recurrent state, or whose steps do not see each
other's weights, shows here.

    git worktree add /tmp/before COMMIT
    python benchmarks/recurrent_kl.py --before /tmp/before [--steps 40000]
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

from lib import reporting

RESULTS = reporting.results_dir(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The pendulum config with a GRU policy on chunked whole episodes.
OVERRIDES = dict(
    network='recurrent_gaussian', rollout_length=None, update_every=8, chunk_length=50,
    batch_size=16, minibatch_size=None)

# Runs in the checkout under test; it must offer train.train and make_config.
_TRAIN = '''
import json, sys
from absl import logging
from agents.scripts import registry, train
try:
    from agents.scripts import run_api
except ImportError:  # A checkout from before the run API.
    from agents.scripts import utility as run_api
logging.set_verbosity(logging.WARNING)
overrides = json.loads(sys.argv[1])
overrides['network'] = registry.REGISTRY.find('network', overrides['network']).value
config = run_api.make_config('pendulum')
with config.unlocked():
    config.update(overrides)
for _ in train.train(config, sys.argv[2], 'parallel'):
    pass
'''


def train(checkout, steps, logdir):
    """Train the config in `checkout`, writing its summaries under `logdir`."""
    # Training summaries are written twice per evaluation interval; evaluations
    # of one episode keep them frequent and cheap.
    overrides = dict(OVERRIDES, steps=steps, eval_every=2000, eval_episodes=1, seed=0)
    environment = dict(os.environ, PYTHONPATH=checkout)
    subprocess.run(
        [sys.executable, '-c', _TRAIN, json.dumps(overrides), logdir], cwd=checkout,
        env=environment, check=True)


def kl_curve(logdir):
    """The (step, value) pairs of `training/kl` in a run's training summaries."""
    from tensorboard.backend.event_processing import event_accumulator
    points = []
    for path in glob.glob(os.path.join(logdir, '**', 'events*'), recursive=True):
        events = event_accumulator.EventAccumulator(path, size_guidance={'scalars': 0})
        events.Reload()
        if 'training/kl' in events.Tags()['scalars']:
            points += [(each.step, each.value) for each in events.Scalars('training/kl')]
    return sorted(points)


def main():
    """Run the measurement and write its table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--before', required=True, help='Checkout to compare with.')
    parser.add_argument('--steps', type=int, default=40_000)
    parser.add_argument('--out', default=RESULTS)
    args = parser.parse_args()
    curves = {}
    for name, checkout in (('before', os.path.abspath(args.before)), ('after', ROOT)):
        commit = subprocess.run(
            ['git', 'rev-parse', '--short', 'HEAD'], cwd=checkout, capture_output=True,
            text=True, check=True).stdout.strip()
        with tempfile.TemporaryDirectory() as logdir:
            train(checkout, args.steps, logdir)
            curves[f'{name} ({commit})'] = kl_curve(logdir)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'recurrent_kl.json'), 'w') as file_:
        json.dump(curves, file_)
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    figure, axes = pyplot.subplots(figsize=(7, 4))
    for label, points in curves.items():
        axes.plot(*zip(*points), label=label)
    axes.set_yscale('log')
    axes.set_xlabel('training steps')
    axes.set_ylabel('training/kl (mean over the update steps)')
    axes.set_title('Pendulum-v1, GRU policy, chunks of 50 steps of whole episodes')
    axes.legend()
    figure.tight_layout()
    figure.savefig(os.path.join(args.out, 'recurrent_kl.png'), dpi=100)
    lines = ['| checkout | updates | median training/kl | largest |', '|---|---:|---:|---:|']
    for label, points in curves.items():
        values = sorted(value for _, value in points)
        lines.append(f'| {label} | {len(values)} | {values[len(values) // 2]:.4f} | '
                     f'{values[-1]:.4f} |')
    lines.append(f'\nCommand: `python benchmarks/recurrent_kl.py --before {args.before} '
                 f'--steps {args.steps}`.')
    text = '\n'.join(lines) + '\n'
    with open(os.path.join(args.out, 'recurrent_kl.md'), 'w') as file_:
        file_.write(text)
    print(text)


if __name__ == '__main__':
    main()
