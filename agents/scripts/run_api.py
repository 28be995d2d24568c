"""The run API: what train, visualize, export, the tune worker and the benchmarks share.

A training run goes through these steps, in this order, as this module reads:

1. Its config. `make_config(name, overrides)` makes and checks a new run's
   config from a config function; `save_config` writes it to the run's
   `config.yaml` and `load_config` reads it back, checked alike.
2. The checkpoint to resume. `check_resumable(logdir)` refuses to resume a
   run without one before anything is built; `resolve_checkpoint(logdir,
   checkpoint)` turns `--checkpoint` (a path prefix, or 'best') into a path
   prefix, and `check_checkpoint(path)` checks that one is on disk.
3. The graph. `define_batch_env(constructors, backend, ...)` makes the
   in-graph batch environment (the constructors come from
   `environments.environment_constructors(config, count)`);
   `define_simulation_graph(batch_env, algorithm, config, loop)` the
   algorithm and the step that acts and learns; `define_checkpoints(logdir,
   ...)` the checkpoints of its variables.
4. The session. `session_config()` holds the session options
   (`GRAPH_OPTIMIZERS`, `GRAPH_OPTIMIZER_PASSES`); `SignalSafeSession` is a
   session that holds Ctrl-C and SIGTERM back while it runs;
   `initialize_variables(sess, store, checkpoint, resume)` initializes the
   variables and restores the checkpoint of a resumed run.

Every function refuses bad input with a `ConfigError` (also `run_api.ConfigError`)
of one line saying what to fix. `agents.scripts.utility` keeps the original
BatchPPO's names of five of them (`define_batch_env`, `define_simulation_graph`,
`initialize_variables`, `save_config`, `load_config`).
"""

import os
import re

from absl import logging
import ruamel.yaml
import tensorflow as tf

from agents import tools
from agents.scripts import config_schema
from agents.scripts import environments
from agents.scripts import registry
from agents.scripts.cli import config_names
from agents.scripts.cli import config_yaml
from agents.scripts.cli import interrupts
from agents.scripts.cli.command_line import ENV_BACKENDS
from agents.tools import checkpoints
from agents.tools.schema import ConfigError


def make_config(name, overrides=None):
    """Build and validate the configuration `name` as a locked AttrDict.

    Args:
      name: Config function in configs.py, or `module:function`.
      overrides: Dict of keys to set over those of the config function, checked
        like them, such as those of `--set`.

    Raises:
      ConfigError: If there is no such configuration or it is invalid; its
        message names the keys of `overrides`.
    """
    values = config_names.find(name)()
    values.update(overrides or {})
    source = f'config {name}' + (f' with {", ".join(overrides)} set' if overrides else '')
    # A config function is code the user runs: like Gymnasium, an env id
    # `module:EnvId` imports its module, which registers the id.
    try:
        environments.import_environment_module(values.get('env'))
    except ValueError as error:
        raise ConfigError(f'{source}: {error}') from None
    return config_schema.make(values, source)


def save_config(config, logdir):
    """Write the configuration to `logdir/config.yaml`, callables by registered name.

    Args:
      config: Configuration AttrDict.
      logdir: Directory of the run.

    Returns:
      Path of the written file.
    """
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, 'config.yaml')
    temporary = path + '.tmp'
    with open(temporary, 'w') as file_:
        config_yaml.yaml().dump(_to_data(dict(config)), file_)
    os.replace(temporary, path)
    return path


def load_config(logdir):
    """Load and validate the configuration of a run from `logdir/config.yaml`.

    The file is data: it holds plain values, and callables by the names of
    registry entries, so loading it imports and runs nothing.

    Args:
      logdir: Directory of the run.

    Raises:
      ConfigError: If the file is missing, not UTF-8 YAML, or an invalid
        configuration.

    Returns:
      Configuration AttrDict.
    """
    path = os.path.join(logdir, 'config.yaml')
    if not os.path.exists(path):
        raise ConfigError(
            f'No config.yaml in {logdir}: resume with the run directory of an earlier '
            f'run (--logdir=<parent> --timestamp=<run>).')
    with open(path, 'rb') as file_:
        content = file_.read()
    try:
        text = content.decode('utf-8')
    except UnicodeDecodeError as error:
        line = content.count(b'\n', 0, error.start) + 1
        raise ConfigError(
            f'{path} is not UTF-8 text: byte {content[error.start]:#04x} on line {line}. Fix '
            f'or restore the file.') from None
    try:
        data = config_yaml.yaml().load(text)
    except ruamel.yaml.YAMLError as error:
        raise ConfigError(f'Cannot parse {path}: {config_yaml.describe_error(error)}') from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path} does not hold a mapping of config keys to values.')
    return config_schema.make(data, path)


def _to_data(value):
    """Convert config values into YAML data; callables become their registered names."""
    if isinstance(value, dict):
        return {str(key): _to_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_data(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    name = registry.REGISTRY.name_of(value)
    if name is None:
        raise ConfigError(
            f'Cannot save the config value {value!r}: use numbers, strings, lists, dicts, '
            f'or registered callables (agents.scripts.registry.register).')
    return name


def check_resumable(logdir):
    """Refuse to resume a run that has no checkpoint, before anything is built for it.

    Raises:
      ConfigError: If `logdir` holds no complete checkpoint.
    """
    try:
        checkpoints.Checkpoints(None, logdir).check_exists()
    except checkpoints.CheckpointError as error:
        raise _unresumable(error) from None


def resolve_checkpoint(logdir, checkpoint):
    """The checkpoint path prefix that `--checkpoint` names in the run `logdir`.

    Args:
      logdir: Directory of the run.
      checkpoint: A checkpoint path prefix; 'best' for the checkpoint of the
        run's best evaluation; or None.

    Raises:
      ConfigError: If there is no such checkpoint.

    Returns:
      The path prefix, or None if `checkpoint` is None.
    """
    if checkpoint != 'best':
        if checkpoint is not None:
            check_checkpoint(checkpoint)
        return checkpoint
    try:
        best = checkpoints.read_best(logdir)
    except checkpoints.CheckpointError as error:
        raise ConfigError(f'{error} Pass --checkpoint=<path prefix> instead.') from None
    if best is None:
        raise ConfigError(
            f'The run {logdir} has no best checkpoint ({checkpoints.BEST}): runs keep one from '
            f'their first evaluation on. Pass --checkpoint=<path prefix> instead.')
    check_checkpoint(best['checkpoint'])
    return best['checkpoint']


def check_checkpoint(path):
    """Raise a ConfigError unless `path` is the path prefix of a checkpoint on disk."""
    if not os.path.isfile(path + '.index'):
        raise ConfigError(
            f'No checkpoint {path}: pass the path prefix of a checkpoint, the name of its '
            f'.index file without the extension.')


def define_batch_env(constructors, backend='parallel', **backend_options):
    """Create the in-graph batch environment over environments from `constructors`.

    Args:
      constructors: One zero-argument environment constructor per environment.
      backend: Where the environments run, one of `ENV_BACKENDS`: 'parallel'
        (several environments per worker process, shared memory), 'inprocess'
        (in this process), 'process' (one worker process each), 'ray' (Ray
        actors) or 'envpool' (envpool's tasks); see `agents.tools.envs`.
      **backend_options: Options of the backend, such as `num_workers` for
        'parallel' or `address` for 'ray'.

    Raises:
      ConfigError: If the backend is unknown.

    Returns:
      In-graph batch environment.
    """
    if backend not in ENV_BACKENDS:
        raise ConfigError(
            f'Unknown environment backend {backend!r}; choose one of {", ".join(ENV_BACKENDS)}.')
    if backend in ('parallel', 'envpool'):
        # The graph ignores infos, so the backend need not collect them.
        backend_options.setdefault('return_infos', False)
    with tf.name_scope('environments'):
        return tools.InGraphBatchEnv(
            tools.envs.make_batch_env(backend, constructors, **backend_options))


def define_simulation_graph(batch_env, algorithm, config, loop=None):
    """Define the algorithm and the simulation operation of the training graph.

    Args:
      batch_env: In-graph batch environment.
      algorithm: Algorithm class, constructed as
        `algorithm(batch_env, step, is_training, should_log, config)`.
      config: Configuration; its `seed`, if set, becomes the graph seed.
      loop: `tools.Loop` whose phases run the operation, which then makes the
        loop's `steps_per_run` steps per run and advances its global step after
        each; one step per run, leaving the global step, if None.

    Returns:
      AttrDict of the tensors the training loop needs: step, is_training,
      should_log, force_reset, algorithm, done, score, summary.
    """
    if config.get('seed') is not None:
        tf.compat.v1.set_random_seed(config.seed)
    is_training = tf.compat.v1.placeholder(tf.bool, (), name='is_training')
    if loop:
        step, should_log, force_reset = loop.step, loop.log, loop.reset
        steps_per_run, after_step = loop.steps_per_run, loop.advance_step
    else:
        step = tf.compat.v1.train.get_or_create_global_step()
        should_log = tf.compat.v1.placeholder(tf.bool, (), name='should_log')
        force_reset = tf.compat.v1.placeholder(tf.bool, (), name='force_reset')
        steps_per_run = after_step = None
    algo = algorithm(batch_env, step, is_training, should_log, config)
    done, score, summary = tools.simulate(
        batch_env, algo, should_log, force_reset, steps_per_run, after_step)
    logging.info('Graph contains %d trainable variables.', tools.count_weights())
    return tools.AttrDict(
        step=step, is_training=is_training, should_log=should_log,
        force_reset=force_reset, algorithm=algo, done=done, score=score, summary=summary)


def define_checkpoints(logdir, keep=5, every_seconds=None, exclude=(r'.*_temporary.*',)):
    """Checkpoints in `logdir` of the graph's variables except those matching `exclude`.

    Environment, episode and memory variables are excluded: the environments'
    Python state is not checkpointed, so a resumed run starts new episodes.

    Args:
      logdir: Directory of the checkpoints.
      keep: Number of checkpoints to keep.
      every_seconds: Store a checkpoint when this many seconds passed since the
        last one, where the loop asks; never if None.
      exclude: Regular expressions of variable names not to store.

    Returns:
      `tools.checkpoints.Checkpoints`.
    """
    variables = tf.compat.v1.global_variables()
    for pattern in exclude:
        variables = [variable for variable in variables if not re.match(pattern, variable.name)]
    saver = tf.compat.v1.train.Saver(variables, max_to_keep=None)
    return checkpoints.Checkpoints(saver, logdir, keep, every_seconds)


# The Grappler graph optimizers run on the scripts' graphs, in order; None runs
# TensorFlow's default set and an empty tuple none. Dependency optimization
# removes the no-ops and identities that the graph code's control dependencies
# add. The default set took 0.7-1.3 s more at the first run of a training graph
# and made later steps no faster (benchmarks/graph_rewrites.py). Each new set of
# fetches (initializing, reading the global step, storing a checkpoint) pays
# them over the whole graph; placing only the fetched part of the graph
# (`place_pruned_graph`) skips that, but leaves the loop bodies unoptimized
# (benchmarks/probes/session_options.py).
GRAPH_OPTIMIZERS = ('dependency',)
# Passes of those optimizers over a graph: 1, or 2 (TensorFlow's default). A
# second pass made no training phase faster, and made each new set of fetches
# cost more at its first run (benchmarks/probes/optimizer_passes.py).
GRAPH_OPTIMIZER_PASSES = 1


def session_config():
    """Session options of the scripts.

    Operations asked for a GPU run on the CPU where there is none, and Grappler
    runs only the optimizers of `GRAPH_OPTIMIZERS`, in `GRAPH_OPTIMIZER_PASSES`
    passes.
    """
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    if GRAPH_OPTIMIZERS is not None:
        rewrites = config.graph_options.rewrite_options
        rewrites.optimizers.extend(GRAPH_OPTIMIZERS)
        rewrites.disable_meta_optimizer = not GRAPH_OPTIMIZERS
        rewrites.meta_optimizer_iterations = GRAPH_OPTIMIZER_PASSES
    return config


class SignalSafeSession(tf.compat.v1.Session):
    """A session whose `run` holds a stopping signal back until it returns.

    A signal's Python handler runs in the main thread between bytecodes, and an
    exception raised there from within TensorFlow's own Python code around
    `run` (which converts errors for C++) breaks that code. So within
    `interrupts.raised_on()`, Ctrl-C or SIGTERM during `run` is raised when
    `run` returns or fails. It returns soon: the environment backends stop
    waiting for their workers at such a signal.
    """

    def run(self, *args, **kwargs):
        with interrupts.deferred():
            return super().run(*args, **kwargs)


def initialize_variables(sess, store, checkpoint=None, resume=False):
    """Initialize all variables, then restore a checkpoint when resuming.

    Args:
      sess: Session.
      store: `tools.checkpoints.Checkpoints` of the run.
      checkpoint: Checkpoint path prefix to restore; the newest that restores
        if None.
      resume: Whether to restore a checkpoint.

    Raises:
      ConfigError: If no checkpoint restores, or the chosen one does not.

    Returns:
      The restored checkpoint, or None.
    """
    sess.run(tf.group(
        tf.compat.v1.global_variables_initializer(),
        tf.compat.v1.local_variables_initializer()))
    if not resume:
        return None
    try:
        return store.restore(sess, checkpoint)
    except checkpoints.CheckpointError as error:
        raise _unresumable(error) from None


def _unresumable(error):
    """The ConfigError of a resume that found nothing to restore, saying what to do."""
    return ConfigError(
        f'{error} Pass --checkpoint=<path prefix> of one that restores, or start a new '
        f'run without --timestamp.')
