"""The command line flags the commands share, defined without importing TensorFlow.

The commands define these flags and parse them before TensorFlow loads, so a
mistyped flag is reported at once.
"""

import sys

from absl import flags

ENV_BACKENDS = ('inprocess', 'process', 'parallel', 'ray', 'envpool')


def define_run_flags(logdir_help, config_role):
    """Define --logdir and --config, the flags of the commands that train (train, tune).

    Args:
      logdir_help: Help of --logdir: what the directory holds.
      config_role: What the config is to the command, the start of --config's help.
    """
    flags.DEFINE_string('logdir', None, logdir_help)
    flags.DEFINE_string(
        'config', None, f'{config_role}: a config function in agents/scripts/configs.py, '
        'such as pendulum, or module:function for your own.')


def define_environment_flags():
    """Define the absl flags choosing where environments run, shared by the scripts."""
    flags.DEFINE_boolean(
        'env_processes', True,
        'Step the environments in worker processes, free of the GIL (the parallel backend).')
    flags.DEFINE_enum(
        'env_backend', None, list(ENV_BACKENDS),
        'Where environments run; overrides --env_processes. inprocess: in this process; '
        'process: one worker process per environment; parallel: several environments per '
        'worker process with shared memory; ray: Ray actors (pip install -e ".[ray]"); '
        'envpool: the tasks envpool ships, in its C++ thread pool (pip install -e '
        '".[envpool]").')
    flags.DEFINE_integer(
        'num_workers', None, 'Worker processes of the parallel backend.', lower_bound=1)
    flags.DEFINE_string(
        'ray_address', None, 'Address of a running Ray cluster; a local one starts if unset.')
    flags.DEFINE_float(
        'env_timeout', None, 'Seconds an environment may take for a step or reset before the '
        'run stops with an error; overrides the config key env_timeout.')
    flags.register_validator(
        'env_timeout', lambda value: value is None or value > 0,
        '--env_timeout must be a positive number of seconds.')
    flags.DEFINE_list(
        'register', [], 'Modules to import that register networks, algorithms, optimizers or '
        'environment constructors the config names.')


def parse_flags(argv):
    """Parse the command line into absl's flags; bad input ends the command with one line.

    A bad flag, or a word that is not a flag (such as `steps=1000`, which absl
    would pass over), is bad input.

    Pass it as `app.run(main, flags_parser=command_line.parse_flags)`.

    Args:
      argv: The command line, the program first.

    Returns:
      The program, the only argument that is not a flag.
    """
    try:
        arguments = flags.FLAGS(argv)
    except flags.Error as error:
        exit_with(str(error))
    if len(arguments) > 1:
        # absl would pass them to main, which has no use for them.
        setting = 'with --set steps=VALUE or ' if 'set' in flags.FLAGS else ''
        exit_with(
            f'Unexpected argument {arguments[1]!r}: flags start with "--" (see --help), and '
            f'config keys such as steps are set {setting}in a config function '
            f'(--config=module:function, see docs/training.md).')
    return arguments


def exit_with(message, code=1):
    """Exit with `code`, saying `message` on one line of standard error."""
    print(message, file=sys.stderr, flush=True)
    sys.exit(code)


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
