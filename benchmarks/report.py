r"""Writes the results page, docs/results.md, from the committed run files.

Reads the per-run JSON files that `learning.py` writes (one per library,
task and seed, in `benchmarks/results/learning/runs/`) and the exported
policies' plays that `export_runs.py` records (`benchmarks/results/export_play/
runs/`), and writes one table per group of tasks, the curves, and the short
table of the README (between its `results` markers). Intervals are 95%
stratified bootstrap confidence intervals (rliable, Agarwal et al. 2021), with
a fixed seed, so the page repeats byte for byte; `report_test.py` fails when
the committed page differs from what this writes.

    python benchmarks/report.py              # page, README table and curves
    python benchmarks/report.py --check      # exit 1 if the page or README is stale
"""

import argparse
import collections
import glob
import json
import os
import sys

import learning
import numpy as np
import reporting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(ROOT, 'benchmarks', 'results', 'learning', 'runs')
EXPORT_PLAYS = os.path.join(ROOT, 'benchmarks', 'results', 'export_play', 'runs')
CURVES = os.path.join(ROOT, 'benchmarks', 'results', 'learning', 'curves')
PAGE = os.path.join(ROOT, 'docs', 'results.md')
README = os.path.join(ROOT, 'README.md')
README_MARKERS = ('<!-- results table: written by benchmarks/report.py -->',
                  '<!-- end of results table -->')
BOOTSTRAP_SEED = 0
BOOTSTRAP_REPS = 5_000

Anchor = collections.namedtuple('Anchor', 'source, score, runs')
Anchor.__doc__ = """A published score at the task's budget.

Attributes:
  source: Who published it, with the algorithm.
  score: The published score at 1M training steps.
  runs: 'mean of N seeds' or 'single run'.
"""

# Published scores at 1M steps on the v3/v4 tasks (ours run on v5). The target
# of each task is the best on-policy one found with 3 or more seeds.
ANCHORS = {
    'cheetah': (Anchor('rl-baselines3-zoo PPO', 5819, 'single run'),
                Anchor('CleanRL PPO', 1443, 'mean of 3 seeds')),
    'hopper': (Anchor('sb3-contrib TRPO', 3372, 'mean of 3+ seeds'),
               Anchor('rl-baselines3-zoo TRPO', 3618, 'single run'),
               Anchor('rl-baselines3-zoo PPO', 2410, 'single run'),
               Anchor('CleanRL PPO', 2383, 'mean of 3 seeds')),
    'walker': (Anchor('sb3-contrib TRPO', 4500, 'mean of 3+ seeds'),
               Anchor('rl-baselines3-zoo TRPO', 4933, 'single run'),
               Anchor('rl-baselines3-zoo PPO', 3479, 'single run'),
               Anchor('CleanRL PPO', 2288, 'mean of 3 seeds')),
    'ant': (Anchor('sb3-contrib TRPO', 3554, 'mean of 3+ seeds'),
            Anchor('rl-baselines3-zoo TRPO', 4982, 'single run'),
            Anchor('rl-baselines3-zoo PPO', 1327, 'single run')),
    'humanoid': (Anchor('CleanRL PPO', 716, 'mean of 3 seeds'),
                 Anchor('Tianshou A2C (best so far)', 1726, 'mean of 10 seeds')),
}
TARGETS = {'cheetah': 5819, 'hopper': 3372, 'walker': 4500, 'ant': 3554, 'humanoid': 716}

# The speed summary: each claim in words, and the page that measures it.
SPEED = (
    ('A whole 1M-step HalfCheetah run against SB3 PPO, collection and update apart',
     'design/collection.md#a-whole-mujoco-run'),
    ('The training loop on Pendulum against SB3',
     'design/collection.md#the-training-loop-against-sb3'),
    ('Where a collection step\'s time goes: the environments alone, the graph\'s floor, '
     'the training graph', 'design/collection.md#a-batch-step-taken-apart'),
    ('The update against the machine\'s matmul peak',
     'design/update.md#how-near-the-machines-peak-the-update-can-come'),
    ('Where each gradient step runs (`gradient_graph`)', 'design/update.md#the-gradient-step'),
    ('Recurrent configs against feed-forward ones', 'design/update.md#the-recurrent-loop'),
    ('The `parallel` backend against Gymnasium\'s vector environments',
     'design/parallel.md#throughput-against-gymnasiums-vector-environments'),
    ('The envpool backend against raw envpool; the wrappers; Ray', 'design/backends.md'),
    ('SB3 PPO through the adapters', 'design/adapters.md#training-sb3-ppo'),
    ('Resident memory of a run', 'design/memory.md#the-target-at-most-1-gib'),
)

PROTOCOL = """\
Every row comes from `python benchmarks/learning.py`, which trains the shipped
configs, each run in a process of its own, and evaluates the policy's mode on
10 complete episodes every `eval_every` training steps and at the budget, on
environments seeded apart from training. Steps are environment steps the agent
trained on; evaluation does not count. **At budget** is the last evaluation;
**best so far** is each run's best evaluation (the run's `best` checkpoint
keeps it), averaged over the runs. Intervals are 95% stratified bootstrap
confidence intervals over the runs ([rliable](https://github.com/google-research/rliable));
**IQM** is the interquartile mean, the mean of the middle half of the runs.
The shipped configs were tuned on seeds from 100 on; the rows here use seeds
0-9, which tuning never saw ([tuning.md](tuning.md)). A seeded run repeats to
the digit on one processor with one set of packages; another processor's
kernels round differently ([training.md](training.md#repeating-a-run)), so
each table names the commits and processors of its runs.

**Exported policy** is an independent check of the trainer's evaluation: the
final checkpoint of each run, exported with `python -m agents.scripts.export`,
played for 10 episodes on seeds apart from training and evaluation by
`benchmarks/export_play.py`, a process that loads TensorFlow and Gymnasium but
not `agents` (`python benchmarks/export_runs.py`).

**Peak memory** is the highest resident memory (RSS) of the trainer and its
environment workers together, sampled at every evaluation of every run; SB3's
runs do not record it.
"""


def load_runs(directory=RUNS):
    """Every run file of `directory`, as dicts, sorted by library, task and seed."""
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, '*.json'))):
        with open(path) as file_:
            run = json.load(file_)
        run['file'] = os.path.relpath(path, ROOT)
        runs.append(run)
    return sorted(runs, key=lambda run: (run['library'], run['task'], run['seed']))


def load_export_plays(directory=EXPORT_PLAYS):
    """The exported policies' plays (`<task>-<seed>.json`), by (task, seed)."""
    plays = {}
    for path in sorted(glob.glob(os.path.join(directory, '*.json'))):
        task, seed = os.path.splitext(os.path.basename(path))[0].rsplit('-', 1)
        with open(path) as file_:
            plays[task, int(seed)] = json.load(file_)
    return plays


def interval(scores, statistic):
    """The statistic of the scores and its 95% stratified bootstrap interval.

    Args:
      scores: One score per run.
      statistic: 'mean' or 'iqm'.

    Returns:
      Tuple of the point estimate, the lower and the upper bound.
    """
    from rliable import library
    from rliable import metrics
    aggregate = {'mean': metrics.aggregate_mean, 'iqm': metrics.aggregate_iqm}[statistic]
    # rliable resamples with NumPy's global generator; seed it, and leave it as it was.
    state = np.random.get_state()
    np.random.seed(BOOTSTRAP_SEED)
    try:
        points, intervals = library.get_interval_estimates(
            {'runs': np.asarray(scores, np.float64).reshape(-1, 1)},
            lambda matrix: np.array([aggregate(matrix)]), reps=BOOTSTRAP_REPS)
    finally:
        np.random.set_state(state)
    return float(points['runs'][0]), float(intervals['runs'][0, 0]), float(
        intervals['runs'][1, 0])


def _estimate(scores, statistic):
    point, low, high = interval(scores, statistic)
    return f'{point:,.0f} [{low:,.0f}, {high:,.0f}]'


def _final(run):
    return run['evaluations'][-1][1]


def _best(run):
    return max(each[1] for each in run['evaluations'])


def provenance(runs):
    """Commits and processors of the runs, for a table's caption.

    Runs that share a commit and processor form one group; where the runs
    form several, each group names its libraries.
    """
    groups = collections.defaultdict(set)
    for run in runs:
        groups[run.get('commit'), _processor_name(run.get('processor'))].add(run['library'])
    if len(groups) == 1:
        return _record(*next(iter(groups)))
    return '; '.join(
        f'{_record(commit, processor)} for {" and ".join(sorted(libraries))}'
        for (commit, processor), libraries in sorted(
            groups.items(), key=lambda group: sorted(group[1])))


def _record(commit, processor):
    if commit is None and processor is None:
        return 'commit and processor not recorded'
    return f'commit {commit or "not recorded"}, {processor or "processor not recorded"}'


def _processor_name(processor):
    if not processor:
        return None
    widest = 'AVX-512' if 'avx512f' in processor['extensions'] else (
        'AVX2' if 'avx2' in processor['extensions'] else 'no AVX2')
    return f'{processor["model"]} ({widest})'


def _by_task(runs, library):
    grouped = collections.defaultdict(list)
    for run in runs:
        if run['library'] == library:
            grouped[run['task']].append(run)
    return grouped


def peer_table(runs, tasks, libraries):
    """Markdown rows of tasks whose peers ran here: final, best and steps to threshold."""
    lines = ['| task | library | seeds | at budget [95% CI] | best so far | '
             'seeds at threshold | steps to threshold | peak memory |',
             '|---|---|---:|---:|---:|---:|---:|---:|']
    for task_name in tasks:
        task = learning.TASKS[task_name]
        for library in libraries:
            group = _by_task(runs, library).get(task_name)
            if not group:
                continue
            reached = [learning.first_reaching(run['evaluations'], task.threshold)
                       for run in group]
            steps = ('-' if not all(reached) else
                     learning.short_steps(np.mean([each[0] for each in reached])))
            lines.append(
                f'| {learning.title(task)} | {library} | {len(group)} | '
                f'{_estimate([_final(run) for run in group], "mean")} | '
                f'{np.mean([_best(run) for run in group]):,.0f} | '
                f'{sum(bool(each) for each in reached)} of {len(group)} | {steps} | '
                f'{peak_memory(group)} |')
    return lines


def mujoco_table(runs, plays):
    """Markdown rows of the MuJoCo tasks: ten seeds with intervals, exports and anchors."""
    lines = ['| task | seeds | mean at 1M [95% CI] | IQM at 1M [95% CI] | best so far | '
             'seeds at target | exported policy | target | peak memory |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    grouped = _by_task(runs, 'agents')
    for task_name in learning.MUJOCO_TASKS:
        group = grouped.get(task_name)
        if not group:
            continue
        finals = [_final(run) for run in group]
        target = TARGETS[task_name]
        played = [play for play in (_final_play(plays, run) for run in group) if play]
        exported = (f'{np.mean([each["mean_score"] for each in played]):,.0f} '
                    f'({len(played)} runs)' if played else 'not played')
        lines.append(
            f'| {learning.TASKS[task_name].env} | {len(group)} | {_estimate(finals, "mean")} | '
            f'{_estimate(finals, "iqm")} | {np.mean([_best(run) for run in group]):,.0f} | '
            f'{sum(score >= target for score in finals)} of {len(group)} | {exported} | '
            f'{target:,} | {peak_memory(group)} |')
    return lines


def peak_memory(runs):
    """The highest resident memory any of the runs sampled, as 'N MiB'; '-' if none did."""
    samples = [each[3] for run in runs for each in run['evaluations'] if len(each) > 3]
    return f'{max(samples):,.0f} MiB' if samples else '-'


def _final_play(plays, run):
    """The play of the run's exported final checkpoint, or None if it has none."""
    play = plays.get((run['task'], run['seed']))
    if play and int(play['checkpoint'].rsplit('-', 1)[1]) == run['evaluations'][-1][0]:
        return play
    return None


def anchor_table():
    """Markdown rows of the published anchors of the MuJoCo tasks."""
    lines = ['| task | published by | at 1M | runs |', '|---|---|---:|---|']
    for task_name, anchors in ANCHORS.items():
        for anchor in anchors:
            lines.append(f'| {learning.TASKS[task_name].env} | {anchor.source} | '
                         f'{anchor.score:,} | {anchor.runs} |')
    return lines


def caption(runs, tasks, command):
    """The command, results files and provenance of a table, per task."""
    lines = [f'`{command}`; run files `benchmarks/results/learning/runs/<library>-<task>-'
             f'<seed>.json`.']
    for task_name in tasks:
        group = [run for run in runs if run['task'] == task_name]
        if group:
            lines.append(f'{learning.TASKS[task_name].env}: {provenance(group)}.')
    return ' '.join(lines)


def curve_links(tasks):
    """Markdown images of the curves of the tasks that have runs."""
    return [f'![{learning.TASKS[task].env}](../benchmarks/results/learning/curves/{task}.png)'
            for task in tasks]


def page(runs, plays):
    """The text of docs/results.md."""
    quick = [task for task in learning.QUICK_TASKS if any(r['task'] == task for r in runs)]
    masked = [task for task in learning.RECURRENT_TASKS if any(r['task'] == task for r in runs)]
    mujoco = [task for task in learning.MUJOCO_TASKS if any(r['task'] == task for r in runs)]
    parts = [
        '# Results',
        '',
        '<!-- Written by `python benchmarks/report.py` from the run files; edit that script, '
        'not this page. -->',
        '',
        'What the shipped configs learn and how fast the library runs. Which script backs '
        'each claim is in [benchmarks/README.md](../benchmarks/README.md); the arms that did '
        'not ship and why are in the [decisions record]'
        '(../benchmarks/results/learning/ablations/README.md).',
        '',
        '## Protocol',
        '',
        PROTOCOL,
        '## Pendulum and CartPole',
        '',
        'Beside Stable-Baselines3 PPO with the rl-baselines3-zoo hyperparameters, run here '
        'with the same protocol. ' + caption(runs, quick, 'python benchmarks/learning.py --quick'),
        '',
        *peer_table(runs, quick, ('agents', 'sb3')),
        '',
        '## Partially observed tasks',
        '',
        'Velocities hidden from the policy: the recurrent configs (GRU) beside the '
        'feed-forward configs on the same masked task (`agents-feedforward`) and '
        'sb3-contrib\'s RecurrentPPO with the zoo\'s settings. ' + caption(
            runs, masked, 'python benchmarks/learning.py --tasks=pendulum_novel,cartpole_novel'),
        '',
        *peer_table(runs, masked, ('agents', learning.CONTROL, 'sb3')),
        '',
        '## MuJoCo',
        '',
        'The shipped configs at 1M training steps. The target is the best on-policy score '
        'published at 1M with 3 or more seeds (below). ' + caption(
            runs, mujoco,
            'python benchmarks/learning.py --tasks=cheetah,hopper,walker,ant,humanoid '
            '--seeds=10 --no-sb3 --logs=LOGS'),
        '',
        *mujoco_table(runs, plays),
        '',
        'Published anchors, on the v3/v4 tasks; ours run on v5:',
        '',
        *anchor_table(),
        '',
        '## Curves',
        '',
        'The mean over seeds and the band between the lowest and highest run.',
        '',
        *curve_links(quick + masked + mujoco),
        '',
        '## Speed',
        '',
        'Speed is claimed against a peer measured in the same run, on one processor; each '
        'page gives its table, command, commit and machine.',
        '',
        '| what is measured | where |',
        '|---|---|',
        *[f'| {claim} | [{link}]({link}) |' for claim, link in SPEED],
        '',
        '## Decisions',
        '',
        'Every setting tried against the shipped configs, with its seeds and verdict, is one '
        'row of the [decisions record](../benchmarks/results/learning/ablations/README.md).',
        '',
    ]
    return '\n'.join(parts)


def readme_table(runs):
    """The README's short learning table: each task's mean at the budget, with the anchors."""
    lines = ['| task | budget | seeds | agents, mean [95% CI] | SB3 PPO, run here | '
             'target (published) |', '|---|---:|---:|---:|---:|---:|']
    ours, peers = _by_task(runs, 'agents'), _by_task(runs, 'sb3')
    for task_name in learning.QUICK_TASKS + learning.MUJOCO_TASKS:
        if task_name not in ours:
            continue
        task = learning.TASKS[task_name]
        peer = peers.get(task_name)
        peer_text = f'{np.mean([_final(run) for run in peer]):,.0f}' if peer else '-'
        target = f'{TARGETS[task_name]:,}' if task_name in TARGETS else '-'
        lines.append(
            f'| {task.env} | {learning.short_steps(task.budget)} | {len(ours[task_name])} | '
            f'{_estimate([_final(run) for run in ours[task_name]], "mean")} | {peer_text} | '
            f'{target} |')
    return '\n'.join(lines)


def readme_text(readme, runs):
    """The README with its results table replaced by the one the runs give."""
    return reporting.replace_block(readme, README_MARKERS, readme_table(runs), 'README.md')


def plot_curves(runs):
    """One PNG per task in benchmarks/results/learning/curves/, every library on it."""
    from agents.scripts.plotting import curves
    by_task = collections.defaultdict(lambda: collections.defaultdict(list))
    for run in runs:
        steps, scores = zip(*[each[:2] for each in run['evaluations']])
        by_task[run['task']][run['library']].append((np.array(steps), np.array(scores)))
    for task_name, runs_by_library in by_task.items():
        curves.plot_curves(
            dict(runs_by_library), os.path.join(CURVES, f'{task_name}.png'),
            f'{learning.title(learning.TASKS[task_name])}: evaluation score')


def main():
    """Write (or with --check, compare) the results page and the README table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--check', action='store_true',
                        help='Write nothing; exit 1 if the page or the README table is stale.')
    args = parser.parse_args()
    runs, plays = load_runs(), load_export_plays()
    texts = {PAGE: page(runs, plays)}
    with open(README) as file_:
        texts[README] = readme_text(file_.read(), runs)
    stale = []
    for path, text in texts.items():
        with open(path) as file_:
            if file_.read() != text:
                stale.append(os.path.relpath(path, ROOT))
        if not args.check:
            with open(path, 'w') as file_:
                file_.write(text)
    if args.check:
        if stale:
            print(f'Stale: {", ".join(stale)}; run python benchmarks/report.py.', file=sys.stderr)
        return 1 if stale else 0
    plot_curves(runs)
    print(f'Wrote docs/results.md ({texts[PAGE].count(chr(10))} lines), the README table and '
          f'{os.path.relpath(CURVES, ROOT)}/.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
