"""Utilities for the training and visualization scripts."""

import importlib
import io
import os
import re

from absl import flags
from absl import logging
import gymnasium as gym
import ruamel.yaml
import tensorflow as tf

from agents import tools
from agents.scripts import configs

# Modules whose callables a saved configuration may name. A configuration file
# is data: loading it imports nothing outside these modules, unless the user
# allows more modules explicitly.
ALLOWED_MODULES = ('agents', 'tensorflow')

ENV_BACKENDS = ('inprocess', 'process', 'parallel', 'ray')


class ConfigError(ValueError):
    """A configuration that cannot be found, loaded, or used."""


def load_config_function(name):
    """Return the configuration function `name` from configs.py or `module:function`.

    Raises:
      ConfigError: If there is no such configuration.
    """
    if ':' in name:
        module_name, function_name = name.split(':', 1)
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise ConfigError(f'Cannot import the module of config {name!r}: {error}') from None
    else:
        module, function_name = configs, name
    function = getattr(module, function_name, None)
    if not callable(function) or function_name.startswith('_'):
        available = ', '.join(
            each for each in dir(configs)
            if not each.startswith('_') and callable(getattr(configs, each))
            and getattr(getattr(configs, each), '__module__', '') == configs.__name__)
        raise ConfigError(
            f'Unknown config {name!r}. Choose one of: {available}; or pass '
            f'--config=module:function for a config function of your own.')
    return function


def make_config(name):
    """Build the configuration `name` as a locked AttrDict."""
    return tools.AttrDict(load_config_function(name)())


def save_config(config, logdir):
    """Write the configuration to `logdir/config.yaml`, callables by import path.

    Args:
      config: Configuration AttrDict.
      logdir: Directory of the run.

    Returns:
      Path of the written file.
    """
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, 'config.yaml')
    stream = io.StringIO()
    _yaml().dump(_to_data(dict(config)), stream)
    temporary = path + '.tmp'
    with open(temporary, 'w') as file_:
        file_.write(stream.getvalue())
    os.replace(temporary, path)
    return path


def load_config(logdir, allowed_modules=()):
    """Load the configuration of a run from `logdir/config.yaml`.

    Callables in the file are resolved only inside `ALLOWED_MODULES` and the
    modules the caller allows, so a file from an unknown source cannot make the
    loader import and run arbitrary code.

    Args:
      logdir: Directory of the run.
      allowed_modules: Further module names (and their submodules) whose
        callables the file may name.

    Raises:
      ConfigError: If the file is missing, invalid, or names a callable outside
        the allowed modules.

    Returns:
      Configuration AttrDict.
    """
    path = os.path.join(logdir, 'config.yaml')
    if not os.path.exists(path):
        raise ConfigError(
            f'No config.yaml in {logdir}: resume with the run directory of an earlier '
            f'run (--logdir=<parent> --timestamp=<run>).')
    try:
        with open(path) as file_:
            data = _yaml().load(file_)
    except ruamel.yaml.YAMLError as error:
        raise ConfigError(f'Cannot parse {path}: {error}') from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path} does not hold a mapping of config entries.')
    allowed = tuple(ALLOWED_MODULES) + tuple(allowed_modules)
    return tools.AttrDict(_from_data(data, allowed, path))


class _ImportPath(str):
    """A callable's import path `module:qualified.name`, tagged in YAML."""

    yaml_tag = '!callable'

    @classmethod
    def to_yaml(cls, representer, node):
        return representer.represent_scalar(cls.yaml_tag, str(node))

    @classmethod
    def from_yaml(cls, constructor, node):
        return cls(node.value)


def _yaml():
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.default_flow_style = False
    yaml.register_class(_ImportPath)
    return yaml


def _to_data(value):
    """Convert config values into YAML data; callables become import paths."""
    if isinstance(value, dict):
        return {str(key): _to_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_data(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(value):
        module, name = _public_location(value)
        return _ImportPath(f'{module}:{name}')
    raise ConfigError(
        f'Cannot save the config value {value!r} of type {type(value).__name__}: use '
        f'numbers, strings, lists, dicts, or importable functions and classes.')


def _public_location(value):
    """The module and qualified name under which `value` can be imported."""
    module, name = value.__module__, value.__qualname__
    if '<' in name:
        raise ConfigError(
            f'Cannot save {value!r} in the config: lambdas and nested functions have no '
            f'import path; define it at the top level of a module.')
    # Classes of the TensorFlow API live in private modules; record the public path.
    if module.startswith('tensorflow.') and getattr(tf.compat.v1.train, name, None) is value:
        module = 'tensorflow.compat.v1.train'
    return module, name


def _from_data(value, allowed, path):
    """Convert YAML data back into config values, resolving allowed import paths."""
    if isinstance(value, dict):
        return {key: _from_data(item, allowed, path) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_data(item, allowed, path) for item in value]
    if isinstance(value, _ImportPath):
        return _resolve(value, allowed, path)
    return value


def _resolve(import_path, allowed, path):
    module_name, _, qualified_name = import_path.partition(':')
    if not any(module_name == each or module_name.startswith(each + '.') for each in allowed):
        raise ConfigError(
            f'{path} names the callable {import_path!r} outside the allowed modules '
            f'{", ".join(allowed)}. If you trust this file, allow the module with '
            f'--allowed_modules={module_name}.')
    try:
        value = importlib.import_module(module_name)
        for part in qualified_name.split('.'):
            value = getattr(value, part)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f'{path} names {import_path!r}, which cannot be found: {error}')
    return value


def define_environment_flags():
    """Define the absl flags choosing where environments run, shared by the scripts."""
    flags.DEFINE_boolean(
        'env_processes', True,
        'Step the environments in worker processes, free of the GIL (the parallel backend).')
    flags.DEFINE_enum(
        'env_backend', None, list(ENV_BACKENDS),
        'Where environments run; overrides --env_processes. inprocess: in this process; '
        'process: one worker process per environment; parallel: several environments per '
        'worker process with shared memory; ray: Ray actors (pip install -e ".[ray]").')
    flags.DEFINE_integer('num_workers', None, 'Worker processes of the parallel backend.')
    flags.DEFINE_string(
        'ray_address', None, 'Address of a running Ray cluster; a local one starts if unset.')
    flags.DEFINE_list(
        'allowed_modules', [], 'Further modules whose callables a saved config.yaml may name.')


def backend_from_flags(flag_values):
    """The environment backend and its options chosen by the flags of `define_environment_flags`.

    Returns:
      Tuple of the backend name and a dict of its options.
    """
    backend = flag_values.env_backend or (
        'parallel' if flag_values.env_processes else 'inprocess')
    if backend == 'parallel' and flag_values.num_workers:
        return backend, dict(num_workers=flag_values.num_workers)
    if backend == 'ray':
        return backend, dict(address=flag_values.ray_address)
    return backend, {}


def check_environment(env):
    """Raise a ConfigError unless `env` is a constructor or a registered Gymnasium id.

    Checked before worker processes start, so a typo fails at once.
    """
    if not isinstance(env, str):
        return
    try:
        gym.spec(env)
    except gym.error.Error as error:
        raise ConfigError(
            f'Unknown environment {env!r} in the config: {error}. MuJoCo tasks need '
            f'pip install -e ".[mujoco]".') from None


def define_batch_env(constructors, backend='process', **backend_options):
    """Create the in-graph batch environment over environments from `constructors`.

    Args:
      constructors: One zero-argument environment constructor per environment.
      backend: Where the environments run: 'inprocess' (in this process),
        'process' (one worker process each), 'parallel' (several environments per
        worker process, shared memory) or 'ray' (Ray actors).
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
    with tf.name_scope('environments'):
        if backend == 'inprocess':
            batch_env = tools.BatchEnv([constructor() for constructor in constructors], True)
        elif backend == 'process':
            batch_env = tools.BatchEnv(
                [tools.wrappers.ExternalProcess(constructor) for constructor in constructors],
                blocking=False)
        elif backend == 'parallel':
            from agents.tools import parallel_batch_env
            # The graph ignores infos, so the workers need not send them.
            backend_options.setdefault('return_infos', False)
            batch_env = parallel_batch_env.ParallelBatchEnv(constructors, **backend_options)
        else:
            from agents.tools import ray_env
            backend_options.setdefault('envs_per_actor', None)  # Fit the cluster's CPUs.
            batch_env = tools.BatchEnv(
                ray_env.ray_environments(constructors, **backend_options), blocking=False)
        return tools.InGraphBatchEnv(batch_env)


def define_simulation_graph(batch_env, algorithm, config):
    """Define the algorithm and the simulation operation of the training graph.

    Args:
      batch_env: In-graph batch environment.
      algorithm: Algorithm class, constructed as
        `algorithm(batch_env, step, is_training, should_log, config)`.
      config: Configuration; its `seed`, if set, becomes the graph seed.

    Returns:
      AttrDict of the tensors the training loop needs: step, is_training,
      should_log, force_reset, algorithm, done, score, summary.
    """
    if config.get('seed') is not None:
        tf.compat.v1.set_random_seed(config.seed)
    step = tf.compat.v1.train.get_or_create_global_step()
    is_training = tf.compat.v1.placeholder(tf.bool, (), name='is_training')
    should_log = tf.compat.v1.placeholder(tf.bool, (), name='should_log')
    force_reset = tf.compat.v1.placeholder(tf.bool, (), name='force_reset')
    algo = algorithm(batch_env, step, is_training, should_log, config)
    done, score, summary = tools.simulate(batch_env, algo, should_log, force_reset)
    logging.info('Graph contains %d trainable variables.', tools.count_weights())
    return tools.AttrDict(
        step=step, is_training=is_training, should_log=should_log,
        force_reset=force_reset, algorithm=algo, done=done, score=score, summary=summary)


def session_config():
    """Session options of the scripts: place operations on the CPU where asked for a GPU."""
    return tf.compat.v1.ConfigProto(allow_soft_placement=True)


def define_saver(exclude=(r'.*_temporary.*',), keep=5):
    """Saver for the graph's variables except those matching `exclude`.

    Environment, episode and memory variables are excluded: the environments'
    Python state is not checkpointed, so a resumed run starts new episodes.
    """
    variables = tf.compat.v1.global_variables()
    for pattern in exclude:
        variables = [variable for variable in variables if not re.match(pattern, variable.name)]
    return tf.compat.v1.train.Saver(variables, max_to_keep=keep)


def initialize_variables(sess, saver, logdir=None, checkpoint=None, resume=False):
    """Initialize all variables, then restore the newest checkpoint when resuming.

    Args:
      sess: Session.
      saver: Saver to restore with.
      logdir: Directory with checkpoints.
      checkpoint: Specific checkpoint path to restore; the newest if None.
      resume: Whether a checkpoint must be restored.

    Raises:
      ConfigError: If a checkpoint is required but missing or unreadable.
    """
    sess.run(tf.group(
        tf.compat.v1.global_variables_initializer(),
        tf.compat.v1.local_variables_initializer()))
    if checkpoint is None and logdir:
        checkpoint = tf.train.latest_checkpoint(logdir)
    if checkpoint is None:
        if resume:
            raise ConfigError(
                f'No checkpoint to resume from in {logdir}. The run stopped before its first '
                f'checkpoint; start it again without --timestamp.')
        return
    try:
        saver.restore(sess, checkpoint)
    except (tf.errors.OpError, ValueError) as error:
        raise ConfigError(
            f'Cannot restore checkpoint {checkpoint}: {error.__class__.__name__}: '
            f'{getattr(error, "message", error)}. Pass an older checkpoint or start a new '
            f'run.') from None
    logging.info('Restored checkpoint %s.', checkpoint)
