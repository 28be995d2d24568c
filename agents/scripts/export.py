r"""Export the policy of a training run so that it acts with TensorFlow alone.

Command line:

    python -m agents.scripts.export --logdir=/path/to/logdir/<timestamp>-<config> \
        --outdir=/path/to/policy

writes a SavedModel of the policy of the run's newest checkpoint (or
`--checkpoint`, `best` for that of its best evaluation) into `--outdir`, a
TFLite file `policy.tflite` beside it for feed-forward policies, and
`export.json`, which names the checkpoint, the environment and the signatures.
The model takes observations as the Gymnasium environment returns them and
returns actions ready for its `step`; see `agents.scripts.serving.saved_policy`
and docs/deployment.md.

The command checks its flags and paths before TensorFlow loads, which takes
seconds: the modules that import it are imported inside `_export`.
"""

import glob
import os
import tempfile

from absl import app
from absl import flags
from absl import logging

from agents.scripts.cli import command_line
from agents.scripts.cli import tensorflow_log
from agents.tools.schema import ConfigError

FORMATS = ('saved_model', 'tflite')


def check_paths(logdir, outdir, force):
    """Check the run and output directories before TensorFlow loads.

    Returns:
      A line saying what to fix, or None.
    """
    if not os.path.isfile(os.path.join(logdir, 'config.yaml')):
        return (f'No config.yaml in {logdir}: pass --logdir=the directory of one run, such as '
                f'<logdir>/<timestamp>-<config>.')
    if not glob.glob(os.path.join(glob.escape(logdir), '*.index')):
        return f'No checkpoint in {logdir}: train the run until it stores one.'
    if os.path.exists(outdir) and not force:
        return f'{outdir} exists: pass --force to replace it, or another --outdir.'
    existing = os.path.dirname(os.path.abspath(outdir))
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    try:  # Creating a directory is the one sure test.
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix='.export-check-'))
    except OSError as error:
        return f'Cannot write to {existing}: {error.strerror}. Pass an --outdir you can write to.'
    return None


def main(argv):
    """Export as the flags say; exit with one line saying what to fix."""
    del argv  # Unused.
    logging.set_verbosity(logging.INFO)
    logdir, outdir = os.path.expanduser(FLAGS.logdir), os.path.expanduser(FLAGS.outdir)
    problem = check_paths(logdir, outdir, FLAGS.force)
    if problem:
        command_line.exit_with(problem)
    tensorflow_log.import_quietly()
    checkpoint = FLAGS.checkpoint
    if checkpoint and checkpoint != 'best':
        checkpoint = os.path.expanduser(checkpoint)
    try:
        description = _export(logdir, outdir, checkpoint)
    except ConfigError as error:
        command_line.exit_with(str(error))
    print(f'Exported {description["checkpoint"]} ({", ".join(description["formats"])}) '
          f'to {outdir}.')


def _export(logdir, outdir, checkpoint):
    """Export the run in `logdir` as the flags say; the description of what it wrote."""
    from agents.scripts import registry
    from agents.scripts import run_api
    from agents.scripts.serving import saved_policy

    registry.import_modules(FLAGS.register)
    config = run_api.load_config(logdir)
    return saved_policy.export(
        config, logdir, outdir, run_api.resolve_checkpoint(logdir, checkpoint), FLAGS.format,
        FLAGS.force)


def define_flags():
    """Define the command line flags; only when run as a script."""
    flags.DEFINE_string('logdir', None, 'Run directory holding config.yaml and checkpoints.')
    flags.DEFINE_string(
        'outdir', None, 'Directory to write the SavedModel, policy.tflite and export.json to.')
    flags.DEFINE_string(
        'checkpoint', None, "Checkpoint path prefix to export, or best for that of the run's "
        'best evaluation; the newest of the run that restores if unset.')
    flags.DEFINE_list(
        'format', None, 'Formats to write, of saved_model and tflite (feed-forward policies '
        'only); both where the policy allows if unset.')
    flags.DEFINE_boolean('force', False, 'Replace --outdir if it exists.')
    flags.DEFINE_list(
        'register', [], 'Modules to import that register networks, algorithms or environment '
        'constructors the run config names.')
    flags.mark_flags_as_required(['logdir', 'outdir'])
    flags.register_validator(
        'format', lambda value: value is None or (value and set(value) <= set(FORMATS)),
        f'choose one or more of {", ".join(FORMATS)}, separated by commas.')


FLAGS = flags.FLAGS


if __name__ == '__main__':
    define_flags()
    app.run(main, flags_parser=command_line.parse_flags)
