r"""Train a reinforcement learning agent, alternating training and evaluation.

Command line:

    python -m agents.scripts.train --logdir=/path/to/logdir --config=pendulum

writes the run directory `<logdir>/<timestamp>-<config>/` with `config.yaml`,
checkpoints, and TensorBoard summaries of the `train` and `eval` phases. The
timestamp names the run, as in the original BatchPPO: `--timestamp=T` starts
a new run `T-<config>`, or resumes the run of that name if it exists.
`--set KEY=VALUE`, repeatable, sets a key of a new run's config, the value
read as YAML as in `config.yaml` (`--set steps=2e6`); a resumed run keeps the
keys of its `config.yaml`, so `--set` there must agree with them.

The command checks its flags, the name of a new run's config and the form of
`--set`, before TensorFlow loads, which takes seconds: TensorFlow and the modules that import
it are imported inside the functions that use them.
"""

import contextlib
import datetime
import glob
import os
import re
import shutil
import signal

from absl import app
from absl import flags
from absl import logging

from agents.scripts.cli import command_line
from agents.scripts.cli import config_names
from agents.scripts.cli import config_yaml
from agents.scripts.cli import interrupts
from agents.scripts.cli import progress as progress_lib
from agents.scripts.cli import tensorflow_log
from agents.tools import graph_errors
from agents.tools.schema import ConfigError


def _add_phases(loop, graph, config):
    """Add a training phase followed by an evaluation phase to the loop.

    Args:
      loop: Loop without phases.
      graph: The simulation graph from `run_api.define_simulation_graph` for the loop.
      config: Configuration with `eval_every`, `eval_episodes` and `steps_per_run`.
    """
    train_steps = eval_interval(config)
    loop.add_phase(
        'train', graph.done, graph.score, graph.summary, steps=train_steps,
        log_every=max(train_steps // 2, 1), feed={graph.is_training: True},
        steps_per_run=config.steps_per_run)
    loop.add_phase(
        'eval', graph.done, graph.score, graph.summary, episodes=config.eval_episodes,
        feed={graph.is_training: False}, steps_per_run=config.steps_per_run)


def eval_interval(config):
    """Training steps between evaluations: `eval_every`, in whole rounds of collection.

    A round is a step of every environment, or a whole rollout of every
    environment with `rollout_length`, so evaluations fall between updates.
    """
    round_steps = config.num_agents * (config.rollout_length or 1)
    return max(1, round(config.eval_every / round_steps)) * round_steps


def train(config, logdir, env_backend='parallel', backend_options=None, resume=False,
          checkpoint=None):
    """Train and evaluate the configured algorithm, yielding the result of each phase.

    The run trains for `config.steps` environment steps, evaluating the
    policy's mode over `config.eval_episodes` complete episodes every
    `config.eval_every` training steps and at the end.

    Checkpoints are stored in `logdir` after each evaluation, by wall time
    (`checkpoint_seconds`), and when training ends for any reason: done,
    interrupted (Ctrl-C, SIGTERM) or failed (an environment raised or died).
    An evaluation that scores higher than all before it also stores the run's
    best checkpoint, recorded in `best.json` (see `tools.checkpoints`).
    Called from a program of your own, training stops alike on Ctrl-C and on
    SIGTERM unless the program handles these signals itself (see
    `interrupts.raised_on`): it stores a checkpoint, closes the environments
    and their workers and shared memory, and raises `interrupts.Interrupted`,
    whose `exit_code` is the conventional one to exit with.

    Args:
      config: Configuration AttrDict.
      logdir: Run directory for checkpoints and summaries, or None.
      env_backend: Where environments run, see `run_api.define_batch_env`.
      backend_options: Dict of options for the environment backend.
      resume: Restore a checkpoint in `logdir` and continue from its step.
      checkpoint: Path prefix of the checkpoint to resume from; the newest that
        restores if None.

    Raises:
      interrupts.Interrupted: On SIGINT or SIGTERM, once the run stopped.

    Yields:
      `tools.loop.PhaseResult` of each training and evaluation phase.
    """
    import tensorflow as tf

    from agents import tools
    from agents.scripts import environments
    from agents.scripts import run_api

    if resume and checkpoint is None:
        run_api.check_resumable(logdir)
    if not config.rollout_length and config.update_every % config.num_agents:
        logging.warning(
            'The number of agents (%d) should divide the episodes per update (%d).',
            config.num_agents, config.update_every)
    with interrupts.raised_on(), tf.Graph().as_default(), tf.device('/cpu:0'):
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, config.num_agents), env_backend,
            timeout=config.env_timeout, **(backend_options or {}))
        try:
            loop = tools.Loop(logdir)
            graph = run_api.define_simulation_graph(batch_env, config.algorithm, config, loop)
            _add_phases(loop, graph, config)
            # Environment, episode and memory variables are not stored: the
            # environments' Python state is not checkpointed, so a resumed run
            # starts new episodes.
            store = None
            if logdir:
                store = run_api.define_checkpoints(
                    logdir, config.keep_checkpoints, config.checkpoint_seconds,
                    exclude=(r'.*_temporary.*',))
            with run_api.SignalSafeSession(config=run_api.session_config()) as sess:
                run_api.initialize_variables(sess, store, checkpoint, resume)
                try:  # From here on, stopping for any reason stores a checkpoint.
                    logging.info(
                        'Training from step %d to %d.', sess.run(graph.step), int(config.steps))
                    for result in loop.run(sess, store, int(config.steps)):
                        if store and result.phase == 'eval':
                            store.save_best(sess, result.step, result.score, result.score_std)
                        yield result
                except KeyboardInterrupt:
                    logging.info('Interrupted; storing a checkpoint before stopping.')
                    raise
                finally:
                    if store:
                        with interrupts.deferred():
                            loop.store_checkpoint(sess, store)
            loop.close()
        finally:
            batch_env.close()


def run_directory(logdir, config_name, timestamp=None):
    """The directory of the run `<timestamp>-<config>` and whether it exists to be resumed.

    As in the original BatchPPO, the timestamp names the run: an existing run of
    that timestamp (and config, if given) is resumed, and a new timestamp starts
    a run of that name. Without a timestamp, a new run is named after the
    current time.

    Args:
      logdir: Base directory of the runs.
      config_name: Name of the config as passed to --config, or None to resume
        the one run of the timestamp.
      timestamp: Name of the run, or None for the current time.

    Raises:
      ConfigError: If no config is given and no run matches, or several runs
        match.

    Returns:
      Tuple of the run directory and whether to resume it.
    """
    logdir = os.path.expanduser(logdir)
    if not timestamp:
        timestamp = datetime.datetime.now().strftime('%Y%m%dT%H%M%S')
        return os.path.join(logdir, f'{timestamp}-{safe_name(config_name)}'), False
    pattern = f'{timestamp}-{safe_name(config_name) if config_name else "*"}'
    matches = sorted(
        path for path in glob.glob(os.path.join(glob.escape(logdir), pattern))
        if os.path.isdir(path))
    if len(matches) > 1:
        names = ', '.join(os.path.basename(path) for path in matches)
        raise ConfigError(
            f'Several runs in {logdir} have the timestamp {timestamp} ({names}); pass '
            f'--config to choose one.')
    if matches:
        return matches[0], True
    if not config_name:
        raise ConfigError(
            f'No run {pattern} in {logdir} to resume; pass --config=NAME to start a new run '
            f'named {timestamp}.')
    return os.path.join(logdir, pattern), False


def safe_name(config_name):
    """The config's name as it appears in run directory names, safe on every file system.

    `module:function` becomes `module.function`; characters other than letters,
    digits, '.', '_' and '-' become '_'.
    """
    return re.sub(r'[^A-Za-z0-9._-]', '_', config_name.replace(':', '.'))


def main(argv):
    """Train as the flags say; exit with one line saying what to fix or what stopped it."""
    del argv  # Unused.
    try:
        check_flags(FLAGS)
    except ConfigError as error:
        command_line.exit_with(str(error))
    tensorflow_log.import_quietly()
    _run(FLAGS)


def check_flags(flag_values):
    """Refuse flags that cannot start or resume a run, before TensorFlow loads.

    Args:
      flag_values: The parsed flags of `define_flags`.

    Raises:
      ConfigError: If the flags start a new run of a config that configs.py
        does not have, name no run to resume, or `--set` something other than
        KEY=VALUE.
    """
    _, resume = run_directory(flag_values.logdir, flag_values.config, flag_values.timestamp)
    config_yaml.read_assignments(flag_values.set)
    if not resume:
        config_names.check(flag_values.config)


def _run(flag_values):
    """Prepare and train the run of the flags; a failure or a stop ends it with one line."""
    import tensorflow as tf

    from agents.scripts import run_api

    logging.set_verbosity(logging.INFO)
    logdir = config = None
    try:
        with interrupts.raised_on():
            logdir, resume, config = prepare_run(flag_values)
            backend, backend_options = command_line.backend_from_flags(flag_values)
            with _removed_if_it_fails_without_checkpoint(logdir, not resume):
                _train_with_progress(
                    config, logdir, backend, backend_options, resume,
                    run_api.resolve_checkpoint(logdir, flag_values.checkpoint))
    except ConfigError as error:
        command_line.exit_with(str(error))
    except KeyboardInterrupt:  # interrupts.Interrupted, or a backend's wait stopped by it.
        stop = interrupts.Interrupted(interrupts.received_signal() or signal.SIGINT)
        command_line.exit_with(
            f'Interrupted by {stop.signal.name}. '
            f'{_describe_checkpoint(flag_values.logdir, logdir)}', stop.exit_code)
    except tf.errors.OpError as error:
        if not graph_errors.is_environment_error(error):
            raise
        command_line.exit_with(_describe_failure(error, config, flag_values.logdir, logdir))


def prepare_run(flag_values):
    """Check the flags and the configuration, then create or find the run directory.

    Everything is checked before the run directory of a new run is created, so
    a refused start leaves nothing behind.

    Args:
      flag_values: The parsed flags of `define_flags`.

    Raises:
      ConfigError: Saying what to fix in the flags or the configuration.

    Returns:
      Tuple of the run directory, whether the run resumes, and the configuration.
    """
    from agents.scripts import registry
    from agents.scripts import run_api

    registry.import_modules(flag_values.register)
    logdir, resume = run_directory(flag_values.logdir, flag_values.config, flag_values.timestamp)
    if flag_values.checkpoint:
        if not resume:
            raise ConfigError(
                f'--checkpoint resumes a run, but there is no run {logdir} to resume.')
        run_api.resolve_checkpoint(logdir, flag_values.checkpoint)
    overrides = config_yaml.read_assignments(flag_values.set)
    if resume:
        config = run_api.load_config(logdir)
        _check_unchanged(config, overrides, logdir)
    else:
        config = run_api.make_config(flag_values.config, overrides)
    if flag_values.env_timeout is not None:
        with config.unlocked():
            config.env_timeout = flag_values.env_timeout
    if resume:
        logging.info('Resuming run %s.', logdir)
    else:
        _create_run_directory(logdir, config)
        logging.info('Starting run %s.', logdir)
    return logdir, resume, config


def _check_unchanged(config, overrides, logdir):
    """Refuse `--set` values that differ from those of the run being resumed.

    A resumed run keeps its `config.yaml`, so the command that started a run
    with `--set` resumes it, and a different value is refused rather than
    ignored.

    Raises:
      ConfigError: Naming the first key whose value differs, or is unknown.
    """
    from agents.scripts import config_schema
    from agents.scripts import registry

    path = os.path.join(logdir, 'config.yaml')
    checked = config_schema.make({**config, **overrides}, f'{path} with --set')
    changed = [key for key in overrides if checked[key] != config[key]]
    if changed:
        key = changed[0]
        new, old = (registry.REGISTRY.name_of(value) or value
                    for value in (checked[key], config[key]))
        raise ConfigError(
            f'--set {key}={new!r} differs from {key}: {old!r} in {path}, the config of the run '
            f'being resumed. Edit that file to change it, or start a new run without '
            f'--timestamp.')


def _create_run_directory(logdir, config):
    """Create the directory of a new run holding its config.yaml; nothing is left if that fails.

    Raises:
      ConfigError: If the directory or the file cannot be written.
    """
    from agents.scripts import run_api

    try:
        os.makedirs(logdir)
    except OSError as error:
        raise ConfigError(
            f'Cannot create the run directory {logdir}: {error.strerror}. Pass a --logdir '
            f'you can write to.') from None
    try:
        run_api.save_config(config, logdir)
    except OSError as error:
        shutil.rmtree(logdir, ignore_errors=True)
        raise ConfigError(
            f'Cannot write the config of the run to {logdir}: {error.strerror}.') from None


@contextlib.contextmanager
def _removed_if_it_fails_without_checkpoint(logdir, is_new):
    """Remove a new run's directory when its start fails before it stored a checkpoint.

    A run that stopped before its first checkpoint has nothing to resume, so a
    failed start leaves no run directory behind.

    Args:
      logdir: Directory of the run.
      is_new: Whether this command created the directory.

    Yields:
      Nothing.
    """
    import tensorflow as tf

    try:
        yield
    except BaseException:
        if is_new and not tf.train.latest_checkpoint(logdir):
            shutil.rmtree(logdir, ignore_errors=True)
        raise


def _train_with_progress(config, logdir, backend, backend_options, resume, checkpoint):
    """Train, showing the progress of the run from the results of its phases."""
    import tensorflow as tf

    start_checkpoint = resume and (checkpoint or tf.train.latest_checkpoint(logdir))
    start = int(start_checkpoint.rsplit('-', 1)[1]) if start_checkpoint else 0
    progress = progress_lib.Progress(config.steps, start)
    progress.redirect(logging.get_absl_handler())
    phases = train(config, logdir, backend, backend_options, resume, checkpoint)
    # Closed at once, not when garbage collected, so the checkpoint is stored now.
    try:
        with contextlib.closing(phases):
            for result in phases:
                if result.phase == 'eval':
                    progress.update(result.step, result.score, result.score_std)
                else:
                    progress.update(result.step)
    finally:
        progress.close()


def _describe_checkpoint(base_logdir, logdir):
    """Where the newest checkpoint of the run is, and the command that resumes it."""
    import tensorflow as tf

    checkpoint = logdir and tf.train.latest_checkpoint(logdir)
    if not checkpoint:
        return 'The run had stored no checkpoint yet.'
    timestamp = os.path.basename(logdir).split('-', 1)[0]
    return (f'Checkpoint {checkpoint} is safe; resume with: python -m agents.scripts.train '
            f'--logdir={base_logdir} --timestamp={timestamp}')


def _describe_failure(error, config, base_logdir, logdir):
    """One line naming the failed environment, its exception, the report and the checkpoint.

    The whole error, with the graph's and the worker's stack traces, goes to
    `error.log` in the run directory.
    """
    report = os.path.join(logdir, 'error.log')
    with open(report, 'w') as file_:
        file_.write(error.message)
    env = config.env if isinstance(config.env, str) else getattr(
        config.env, '__qualname__', repr(config.env))
    return (f'Training stopped: environment {env} failed with '
            f'{graph_errors.summarize(error).rstrip(".")}. '
            f'Full error report: {report}. {_describe_checkpoint(base_logdir, logdir)}')


FLAGS = flags.FLAGS


def define_flags():
    """Define the command line flags; only when run as a script, so importing is free."""
    command_line.define_run_flags(
        'Base directory for the run directories.', 'Config of a new run, named after it')
    flags.DEFINE_string(
        'timestamp', None, 'Name of the run: a new one starts a run of that name, an '
        'existing one resumes that run from its newest checkpoint. Letters, digits, "." '
        'and "_"; the current time if unset.')
    flags.DEFINE_multi_string(
        'set', [], 'KEY=VALUE: set a config key of a new run, the value read as YAML as in '
        'config.yaml, such as --set steps=2e6; repeat for more keys. Saved in config.yaml; on '
        'a resumed run it must agree with that file.')
    flags.DEFINE_string(
        'checkpoint', None, 'Resume the run from this checkpoint path prefix (such as '
        '<run>/model.ckpt-10000), or from that of its best evaluation (best), instead of '
        'the newest one that restores.')
    command_line.define_environment_flags()
    flags.mark_flag_as_required('logdir')
    flags.register_validator(
        'timestamp', lambda value: value is None or re.fullmatch(r'[A-Za-z0-9._]+', value),
        'use letters, digits, "." and "_": the timestamp begins the run directory\'s name '
        '<timestamp>-<config>.')
    flags.register_multi_flags_validator(
        ['config', 'timestamp'], lambda values: values['config'] or values['timestamp'],
        'pass --config=NAME for a new run or --timestamp=T to resume one.')


if __name__ == '__main__':
    define_flags()
    app.run(main, flags_parser=command_line.parse_flags)
