r"""Plot the evaluation scores of training runs over training steps as a PNG.

Command line:

    python -m agents.scripts.plot --logdir=logs [--out=logs/plot.png] [--title=...]

finds every run under `--logdir` (directories with `eval/` summaries, as
train.py writes them), groups runs of one configuration (run directories
`<timestamp>-<config>` that differ only in the timestamp, such as several
seeds) into one curve of their mean score with a band from their lowest to
their highest score, and writes the plot.
"""

import os
import sys

from absl import app
from absl import flags
from absl import logging

from agents.scripts.cli import tensorflow_log
from agents.scripts.plotting import curves


def main(argv):
    """Plot the runs the flags name; exit with an error line if there are none."""
    del argv  # Unused.
    # Reading event files loads TensorFlow.
    tensorflow_log.import_quietly()
    logging.set_verbosity(logging.WARNING)  # TensorBoard's reader logs every file it opens.
    out = FLAGS.out or os.path.join(FLAGS.logdir, 'plot.png')
    try:
        runs_by_label = curves.read_curves(FLAGS.logdir)
        curves.plot_curves(runs_by_label, out, FLAGS.title)
    except (curves.NoScoresError, ImportError) as error:
        sys.exit(f'Error: {error}')
    for label, runs in runs_by_label.items():
        last = [scores[-1] for _, scores in runs]
        print(f'{label}: {len(runs)} run(s), last evaluation score {sum(last) / len(last):.1f}')
    print(f'Wrote {out}')


FLAGS = flags.FLAGS


def define_flags():
    """Define the command line flags; only when run as a script."""
    flags.DEFINE_string('logdir', None, 'Log directory of train.py, or one run directory.')
    flags.DEFINE_string('out', None, 'PNG file to write; <logdir>/plot.png if unset.')
    flags.DEFINE_string('title', None, 'Title of the plot.')
    flags.mark_flag_as_required('logdir')


if __name__ == '__main__':
    define_flags()
    app.run(main)
