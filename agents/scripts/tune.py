r"""Tune a config's keys with Optuna: sample, train, prune, and write the best as a config.

Command line:

    python -m agents.scripts.tune --config=pendulum --trials=20 --logdir=/path/to/study

runs a study of 20 trials in the study directory. Each trial samples the keys
of the search space (`search_space.DEFAULT`, or a file given with --space)
with Optuna's TPE sampler, trains one ordinary run per tuning seed (--seeds)
in a run directory of the study, and reports every evaluation to the study,
whose median pruner stops trials that fall behind. The study is stored in
`study.db`, so the same command resumes it after Ctrl-C or a crash,
continuing unfinished trials from their checkpoints. --jobs=J trains J trials
at once, each in a worker process. At the end the command prints the table
of trials and writes it to `trials.md` and `trials.json`, and writes the best
trial as a config function to `best_config.py`.

Optuna is an optional extra: `pip install -e .[tune]`. The command checks its
flags, the config's name and that the space file reads before TensorFlow and
Optuna load: the modules that import them are imported inside the functions
that use them.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import uuid

from absl import app
from absl import flags

from agents.scripts.cli import command_line
from agents.scripts.cli import config_names
from agents.scripts.cli import interrupts
from agents.scripts.cli import tensorflow_log
from agents.scripts.tuning import space_file
from agents.tools.schema import ConfigError


def main(argv):
    """Run the study as the flags say; exit with one line saying what to fix or what stopped it."""
    try:
        import optuna  # noqa: F401
    except ImportError:
        command_line.exit_with('The tune command needs Optuna: pip install -e .[tune]')
    del argv  # Unused: the command's flags are in FLAGS.
    try:
        config_names.check(FLAGS.config)
        space = space_file.load(FLAGS.space) if FLAGS.space else None
    except ConfigError as error:
        command_line.exit_with(str(error))
    tensorflow_log.import_quietly()
    _tune(space)


def _tune(space):
    """Run the study of the flags; a failure or a stop ends it with one line.

    Args:
      space: The space file's specs (`space_file.load`), or None for the default space.
    """
    from agents.scripts import registry
    from agents.scripts import run_api
    from agents.scripts.tuning import search_space
    from agents.scripts.tuning import studies

    command = ' '.join(
        ['python -m agents.scripts.tune'] + [shlex.quote(arg) for arg in sys.argv[1:]])
    logdir = os.path.expanduser(FLAGS.logdir)
    try:
        with interrupts.raised_on():
            registry.import_modules(FLAGS.register)
            dimensions = search_space.resolve(
                space, FLAGS.config, FLAGS.space and f'space file {FLAGS.space}')
            base = run_api.make_config(FLAGS.config)
            settings = dict(
                config=FLAGS.config, steps=FLAGS.steps or int(base.steps),
                seeds=[int(seed) for seed in FLAGS.seeds], last_evals=FLAGS.last_evals,
                report_every=base.eval_every,
                space={dimension.key: dimension.spec() for dimension in dimensions},
                sampler_seed=FLAGS.sampler_seed, command=command)
            _make_directory(logdir)
            with studies.command_lock(logdir) as lock:
                resumes = studies.create_or_check(logdir, settings)
                print(f'{"Resuming" if resumes else "Starting"} the study in {logdir}.',
                      flush=True)
                try:
                    _run(_job(logdir), lock)
                finally:
                    _report(logdir, dimensions)
    except ConfigError as error:
        command_line.exit_with(str(error))
    except KeyboardInterrupt:
        stop = interrupts.Interrupted(interrupts.received_signal() or signal.SIGINT)
        command_line.exit_with(
            f'Interrupted by {stop.signal.name}. The study in {logdir} is kept; resume it with '
            f'the same command: {command}', stop.exit_code)


def _job(logdir):
    """What the workers of this command do, as plain data (see `tuning.worker.run`)."""
    backend, backend_options = command_line.backend_from_flags(FLAGS)
    return dict(
        logdir=logdir, command=uuid.uuid4().hex, trials=FLAGS.trials,
        startup_trials=FLAGS.startup_trials, prune=FLAGS.prune, prune_after=FLAGS.prune_after,
        env_backend=backend, backend_options=backend_options, env_timeout=FLAGS.env_timeout,
        register=FLAGS.register)


def _run(job, lock):
    """Run the study's trials: in this process, or in `--jobs` worker processes.

    Each worker process leads a session of its own, so that Ctrl-C in a
    terminal reaches this process alone, which passes each signal on once.

    Raises:
      ConfigError: If a worker process failed.
      KeyboardInterrupt: On Ctrl-C or SIGTERM, once every worker stopped.
    """
    from agents.scripts.tuning import worker

    if FLAGS.jobs == 1:
        worker.run(job)
        return
    job = dict(job, parent=os.getpid())
    workers = [
        subprocess.Popen(
            [sys.executable, '-m', 'agents.scripts.tuning.worker', json.dumps(job)],
            start_new_session=True, pass_fds=(lock,))
        for _ in range(FLAGS.jobs)]
    try:
        codes = [worker.wait() for worker in workers]
    except KeyboardInterrupt:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(interrupts.received_signal() or signal.SIGINT)
        for worker in workers:
            worker.wait()
        raise
    failed = sum(code != 0 for code in codes)
    if failed:
        raise ConfigError(
            f'{failed} of {len(workers)} worker processes failed (their errors are above); '
            f'the study is kept, and the same command resumes it.')


def _make_directory(logdir):
    try:
        os.makedirs(logdir, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f'Cannot create the study directory {logdir}: {error.strerror}. Pass a --logdir '
            f'you can write to.') from None


def _report(logdir, dimensions):
    """Print the table of trials and write it, with the best config, into the study directory."""
    from agents.scripts.tuning import report
    from agents.scripts.tuning import studies

    table, best = report.write(logdir, studies.open_study(logdir), dimensions)
    print(f'\nTrials of the study in {logdir} (also in trials.md and trials.json):\n\n{table}\n',
          flush=True)
    if best:
        print(f'The best trial as a config function: {best}', flush=True)


FLAGS = flags.FLAGS


def define_flags():
    """Define the command line flags; only when run as a script, so importing is free."""
    command_line.define_run_flags(
        'Study directory: the study, its runs and its results.', 'Base config')
    flags.DEFINE_integer(
        'trials', None, 'Trials the study has when done, counting those of earlier commands.',
        lower_bound=1)
    flags.DEFINE_integer('jobs', 1, 'Trials trained at once, each in a process.', lower_bound=1)
    flags.DEFINE_string(
        'space', None, 'YAML or JSON file of the keys to search, replacing the default space: '
        'key: {low: L, high: H, log: true} or key: {choices: [...]}.')
    flags.DEFINE_list(
        'seeds', ['100'], 'Seeds of the config each trial trains a run with, its score the '
        'mean over them. Report results of other seeds.')
    flags.DEFINE_integer(
        'steps', None, 'Training steps of each run; the config\'s steps if unset.', lower_bound=1)
    flags.DEFINE_integer(
        'last_evals', 1, 'Evaluations at the end of each run whose mean scores it.',
        lower_bound=1)
    flags.DEFINE_integer(
        'startup_trials', 5, 'Trials sampled at random and never pruned, before TPE samples '
        'and the pruner acts.', lower_bound=0)
    flags.DEFINE_integer(
        'sampler_seed', 0, 'Seed of the sampler: one worker (--jobs=1) samples the same '
        'trials again after the same scores.', lower_bound=0)
    flags.DEFINE_boolean(
        'prune', True, 'Stop a trial whose evaluation falls below the median of the '
        'completed trials\' at the same step.')
    flags.DEFINE_integer(
        'prune_after', 0, 'Steps a trial trains, counted over its runs, before it may be '
        'pruned.', lower_bound=0)
    command_line.define_environment_flags()
    for name in ('logdir', 'config', 'trials'):
        flags.mark_flag_as_required(name)
    flags.register_validator(
        'seeds', _valid_seeds,
        '--seeds must be distinct whole numbers >= 0, separated by commas, such as 100,101.')


def _valid_seeds(seeds):
    return bool(seeds) and all(seed.isdigit() for seed in seeds) and len(set(
        map(int, seeds))) == len(seeds)


if __name__ == '__main__':
    define_flags()
    app.run(main, flags_parser=command_line.parse_flags)
