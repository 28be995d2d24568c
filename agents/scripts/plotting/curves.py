"""Learning curves: evaluation scores over training steps, read and plotted.

Reads the evaluation score of training runs from their TensorBoard event files
and draws one curve per configuration: the mean over its runs (seeds) and the
band between their lowest and highest score. The plot command
(`agents.scripts.plot`) and the learning benchmark both draw with
`plot_curves`.
"""

import collections
import os

import numpy as np

# Summary tags of the evaluation score, tried in order; the first one a run
# has is read. The newer tag comes first, the tag of older runs after it.
SCORE_TAGS = ('eval/mean_score', 'mean_score')

# Subdirectory of a run directory holding the evaluation phase's summaries.
EVAL_DIRECTORY = 'eval'


class NoScoresError(ValueError):
    """A run or log directory without evaluation scores to plot."""


def read_scores(run_dir, tags=SCORE_TAGS):
    """Read the evaluation scores of one run from its event files.

    A resumed run can write a step twice (once before and once after the
    restart); the value written last counts.

    Args:
      run_dir: Run directory with the evaluation summaries in `eval/`.
      tags: Summary tags of the score, tried in order.

    Raises:
      NoScoresError: If the run has none of the tags.

    Returns:
      Tuple of integer steps and float scores, sorted by step.
    """
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util
    # Keep every event, not a sample of them. The accumulator's purging would drop
    # everything before a restart, as the writer logs its start at step 0.
    accumulator = event_accumulator.EventAccumulator(
        os.path.join(run_dir, EVAL_DIRECTORY),
        size_guidance={event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0},
        purge_orphaned_data=False)
    accumulator.Reload()
    available = accumulator.Tags()
    for tag in tags:
        if tag in available[event_accumulator.SCALARS]:
            events = [(each.wall_time, each.step, each.value)
                      for each in accumulator.Scalars(tag)]
        elif tag in available[event_accumulator.TENSORS]:
            # Summaries written by the TF2 summary API hold tensors.
            events = [
                (each.wall_time, each.step, float(tensor_util.make_ndarray(each.tensor_proto)))
                for each in accumulator.Tensors(tag)]
        else:
            continue
        latest = {step: value for _, step, value in sorted(events)}
        steps = np.array(sorted(latest), np.int64)
        return steps, np.array([latest[step] for step in steps], np.float64)
    raise NoScoresError(
        f'No evaluation score ({" or ".join(tags)}) in {os.path.join(run_dir, EVAL_DIRECTORY)}; '
        f'a run writes its first one at the end of its first evaluation phase.')


def find_runs(logdir):
    """Find the run directories under `logdir`, or `logdir` itself if it is a run.

    A run directory is one with an `eval/` subdirectory holding event files.

    Returns:
      Sorted list of run directories.
    """
    runs = []
    for directory, subdirectories, _ in os.walk(logdir):
        if EVAL_DIRECTORY in subdirectories and any(
                name.startswith('events.out.tfevents.')
                for name in os.listdir(os.path.join(directory, EVAL_DIRECTORY))):
            runs.append(directory)
            subdirectories.clear()  # Do not look for runs inside runs.
    return sorted(runs)


def run_label(run_dir):
    """The configuration part of a run directory's name `<timestamp>-<config>`.

    Runs of one configuration with different timestamps, such as several
    seeds, share the label.
    """
    name = os.path.basename(os.path.normpath(run_dir))
    return name.split('-', 1)[1] if '-' in name else name


def read_curves(logdir):
    """Read the evaluation scores of every run under `logdir`, grouped by configuration.

    Runs without a score yet are left out.

    Raises:
      NoScoresError: If `logdir` is missing or no run under it has a score.

    Returns:
      Ordered dict from label to a list of (steps, scores) per run, as
      `plot_curves` takes them.
    """
    if not os.path.isdir(logdir):
        raise NoScoresError(f'No directory {logdir}: pass the --logdir of train.py.')
    curves = collections.OrderedDict()
    for run_dir in find_runs(logdir):
        try:
            scores = read_scores(run_dir)
        except NoScoresError:
            continue
        curves.setdefault(run_label(run_dir), []).append(scores)
    if not curves:
        raise NoScoresError(
            f'No run under {logdir} has an evaluation score yet: pass the log directory of '
            f'train.py (its runs hold eval/ summaries) after the first evaluation phase.')
    return curves


def aggregate(runs):
    """Mean, lowest and highest score over runs at every step any run has.

    Each run is interpolated linearly between its own steps; at a step outside
    a run's range, the runs that reach it count.

    Args:
      runs: List of (steps, scores) arrays per run.

    Returns:
      Tuple of steps, mean, minimum and maximum arrays.
    """
    steps = np.unique(np.concatenate([np.asarray(each[0]) for each in runs]))
    values = np.full((len(runs), len(steps)), np.nan)
    for row, (run_steps, run_scores) in enumerate(runs):
        inside = (steps >= run_steps[0]) & (steps <= run_steps[-1])
        values[row, inside] = np.interp(steps[inside], run_steps, run_scores)
    return steps, np.nanmean(values, 0), np.nanmin(values, 0), np.nanmax(values, 0)


def plot_curves(curves, path, title=None, xlabel='training steps', ylabel='evaluation score'):
    """Plot one curve per label, the mean over its runs and their min-max band, as a PNG.

    Args:
      curves: Dict from label to a list of (steps, scores) arrays, one per run
        (seed) of that label.
      path: File to write; its directory is created.
      title: Title of the plot, or None.
      xlabel: Label of the x-axis.
      ylabel: Label of the y-axis.

    Raises:
      ImportError: If matplotlib is not installed, with the command that installs it.

    Returns:
      The path written.
    """
    try:
        import matplotlib
    except ImportError:
        raise ImportError("Plotting needs matplotlib: pip install -e '.[plot]'.") from None
    matplotlib.use('Agg')  # Files only, no display needed.
    from matplotlib import pyplot as plt
    from matplotlib import ticker
    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=100)
    for label, runs in curves.items():
        steps, mean, low, high = aggregate(runs)
        runs_text = '1 run' if len(runs) == 1 else f'{len(runs)} runs'
        (line,) = axes.plot(steps, mean, label=f'{label} ({runs_text})')
        if len(runs) > 1:
            axes.fill_between(steps, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    axes.xaxis.set_major_formatter(ticker.EngFormatter())  # 200k, 1M
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc='best')
    figure.tight_layout()
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path
