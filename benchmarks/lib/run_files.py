"""The learning runs' files: where they are, reading them, and the scores they hold.

`learning.py` writes one JSON file per run (library, task, seed): its
evaluations as (training step, score, training seconds[, resident MiB])
rows, with the commit and processor that ran it. `learning.py` tabulates
them, `report.py` makes the results page from the committed ones, and
`export_runs.py` names the run its plays come from.
"""

import glob
import json
import os

from . import reporting

# The learning benchmark's results, and its committed runs of the shipped configs.
RESULTS = os.path.join(reporting.ROOT, 'benchmarks', 'results', 'learning')
RUNS = os.path.join(RESULTS, 'runs')


def load_runs(directory=RUNS):
    """Every run file of `directory`, as dicts, sorted by library, task and seed.

    Each dict also names its `file`, relative to the repository's root.
    """
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, '*.json'))):
        with open(path) as file_:
            run = json.load(file_)
        run['file'] = os.path.relpath(path, reporting.ROOT)
        runs.append(run)
    return sorted(runs, key=lambda run: (run['library'], run['task'], run['seed']))


def score_at(evaluations, step):
    """The score of the evaluation nearest to `step`.

    Evaluations fall on whole rounds of collection, so near, not on, round numbers.
    """
    return min(evaluations, key=lambda evaluation: abs(evaluation[0] - step))[1]


def first_reaching(evaluations, threshold):
    """The first evaluation (step, score, train seconds) at or above `threshold`, or None."""
    return next((each for each in evaluations if each[1] >= threshold), None)


def short_steps(steps):
    """Steps as 25k or 1M."""
    return f'{steps / 1e6:.3g}M' if steps >= 1e6 else f'{steps / 1e3:.0f}k'
