r"""Exports each learning run's final checkpoint and plays it without `agents`. Run by hand.

The results page checks the trainer's own evaluation with this: for every run
directory that `learning.py --logs=LOGS` kept (`LOGS/agents-<task>-<seed>/`),
`python -m agents.scripts.export` writes the SavedModel of the newest
checkpoint, the one of the run's last evaluation, and `export_play.py` plays
its mode for `--episodes` episodes in a process that imports TensorFlow and
Gymnasium but not `agents`, on environments seeded apart from training and
evaluation. Each play is written to
`benchmarks/results/export_play/runs/<task>-<seed>.json`, which
`report.py` reads, with the commit and processor of the player and of the
training run, read from its run file in `--runs` (the committed
`benchmarks/results/learning/runs/` by default); a run whose play exists, or
that has no run file, is skipped. A run directory
without `config.yaml` gets the shipped config at the benchmark's protocol,
as `learning.py` trains it without `--set`.

    python benchmarks/export_runs.py --logs=LOGS
    python benchmarks/export_runs.py --logs=LOGS --tasks=hopper,walker
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

from lib import learning_tasks
from lib import reporting
from lib import run_files

PLAYS = os.path.join(reporting.results_dir(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), 'export_play.py')), 'runs')
# The plays' environments are seeded apart from training (seed) and evaluation
# (learning_tasks.EVAL_SEED_OFFSET + seed).
PLAY_SEED_OFFSET = 20_000


def newest_step(run_dir):
    """The step of the run's newest checkpoint, from its `checkpoint` file; 0 if none."""
    path = os.path.join(run_dir, 'checkpoint')
    if not os.path.exists(path):
        return 0
    with open(path) as file_:
        match = re.search(r'^model_checkpoint_path: "[^"]*-(\d+)"', file_.read(), re.MULTILINE)
    return int(match.group(1)) if match else 0


def export_and_play(task, run_dir, seed, out, episodes, run_file):
    """Export the run's newest checkpoint and play it; raise if either step fails.

    Args:
      task: The task's name in `learning_tasks.TASKS`.
      run_dir: The run's directory of TensorBoard logs and checkpoints.
      seed: The run's seed.
      out: The play's results file.
      episodes: Episodes to play.
      run_file: The run's file of `learning.py`, whose commit and processor the play names.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(run_dir, 'config.yaml')):
        from agents.scripts import run_api
        run_api.save_config(learning_tasks.run_config(learning_tasks.TASKS[task], seed), run_dir)
    with tempfile.TemporaryDirectory() as directory:
        policy = os.path.join(directory, 'policy')
        subprocess.run(
            [sys.executable, '-m', 'agents.scripts.export', f'--logdir={run_dir}',
             f'--outdir={policy}', '--format=saved_model'], check=True, capture_output=True)
        subprocess.run(
            [sys.executable, os.path.join(here, 'export_play.py'), f'--model={policy}',
             f'--episodes={episodes}', f'--seed={PLAY_SEED_OFFSET + seed}', f'--out={out}',
             f'--run_file={run_file}'],
            check=False, capture_output=True)
    if not os.path.exists(out):
        raise RuntimeError(f'export_play.py wrote no {out}')


def main():
    """Export and play every kept run that has no play yet."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--logs', required=True, help='The --logs directory of learning.py.')
    parser.add_argument('--tasks', default=None, help='Comma-separated tasks; all if unset.')
    parser.add_argument('--episodes', type=int, default=10)
    parser.add_argument('--runs', default=run_files.RUNS,
                        help="The runs' files of learning.py (default: the committed ones).")
    args = parser.parse_args()
    tasks = args.tasks and set(args.tasks.split(','))
    runs = sorted(glob.glob(os.path.join(args.logs, 'agents-*-*')))
    if not runs:
        parser.error(f'no run directories agents-<task>-<seed> in {args.logs}')
    for run_dir in runs:
        library, task, seed = os.path.basename(run_dir).rsplit('-', 2)
        out = os.path.join(PLAYS, f'{task}-{seed}.json')
        if library != 'agents' or (tasks and task not in tasks) or os.path.exists(out):
            continue
        if newest_step(run_dir) < learning_tasks.TASKS[task].budget:
            print(f'skipped {task} seed {seed}: its run has not reached the budget', flush=True)
            continue
        run_file = os.path.join(args.runs, f'{library}-{task}-{seed}.json')
        if not os.path.exists(run_file):
            print(f'skipped {task} seed {seed}: no run file {run_file}', flush=True)
            continue
        export_and_play(task, run_dir, int(seed), out, args.episodes, run_file)
        print(f'played {task} seed {seed}: {out}', flush=True)


if __name__ == '__main__':
    main()
