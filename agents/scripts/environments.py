"""Create the environments of a configured task; free of TensorFlow.

Worker processes import this module to build their environment, so it imports
only Gymnasium and the pure-Python tools.
"""

import functools
import importlib

import gymnasium as gym
from gymnasium.envs import registration

from agents.tools import spaces
from agents.tools import wrappers


def environment_constructors(config, count, render_mode=None):
    """One zero-argument constructor per environment, each with its own seed.

    Environment `i` is seeded with `1000 * config.seed + i`, so runs with one
    seed see the same observations, and runs with different seeds share no
    environment seed. A Gymnasium id is resolved to its registered spec here:
    Gymnasium's registry lives in each process, and an id registered by a
    module this process imported (`module:EnvId`, or with --register) is
    unknown to worker processes, which make the task from the spec instead.

    Args:
      config: Configuration with `env`, `max_length`, `normalize_ranges` and
        optionally `seed`, `env_kwargs` and `observation_mask`.
      count: Number of environments.
      render_mode: Gymnasium render mode, such as 'rgb_array' for videos.

    Raises:
      ValueError: If the env is an id that is not registered, or whose module
        cannot be imported.

    Returns:
      List of constructors.
    """
    task = config.env
    if isinstance(task, str):
        import_environment_module(task)
        try:
            task = gym.spec(task.rpartition(':')[2])
        except gym.error.Error as error:
            raise ValueError(_describe_failure(task, error)) from None
    seed = config.get('seed')
    return [
        functools.partial(
            make_environment, task, config.max_length, config.normalize_ranges,
            None if seed is None else 1000 * seed + index, render_mode,
            config.get('observation_mask'), config.get('env_kwargs'),
            config.get('previous_action', False))
        for index in range(count)]


def import_environment_module(env):
    """Import the module of a Gymnasium id `module:EnvId`, which registers the id.

    Gymnasium's convention for tasks of your own; `gym.make` imports the module
    too, in each worker process. Ids without a module and constructors are left
    alone.

    Raises:
      ValueError: If the module cannot be imported.
    """
    module = env.rpartition(':')[0] if isinstance(env, str) else ''
    if not module:
        return
    try:
        importlib.import_module(module)
    except ImportError as error:
        raise ValueError(
            f'cannot import {module!r}, the module of environment {env!r}: {error}. Install '
            f'its package or add its directory to PYTHONPATH.') from None


def check_environment(env):
    """Check that `env` is a constructor or a registered Gymnasium id whose task can be made.

    The task's own module is imported, so a missing simulator is reported
    before any worker starts. The module of an id `module:EnvId` must have been
    imported (`import_environment_module`) to register the id.

    Args:
      env: Gymnasium id, `module:EnvId`, or zero-argument constructor.

    Raises:
      ValueError: If the id is not registered or the task needs a package that
        is not installed.
    """
    if not isinstance(env, str):
        return
    try:
        spec = gym.spec(env.rpartition(':')[2])
        if isinstance(spec.entry_point, str):
            registration.load_env_creator(spec.entry_point)
    except (gym.error.Error, ImportError) as error:
        raise ValueError(_describe_failure(env, error)) from None


def check_environment_made(env, kwargs):
    """Check that the task of the Gymnasium id `env` can be made, and trained on.

    The task is made once with `kwargs` and closed, so an argument it does not
    take, a value it refuses, a constructor that fails, or a space the graph
    cannot hold is reported before any worker starts.

    Args:
      env: Gymnasium id or `module:EnvId` whose module has been imported.
      kwargs: Arguments for `gymnasium.make`, or None.

    Raises:
      ValueError: If making the task fails or the graph cannot hold its spaces.
    """
    try:
        made = gym.make(env, **(kwargs or {}))
    except Exception as error:  # Whatever the task's constructor raises.
        if kwargs:
            raise ValueError(f'{env} does not take {kwargs}: {_first_line(error)}') from None
        raise ValueError(f'cannot make environment {env!r}: {_first_line(error)}') from None
    try:
        spaces.check_space(made.observation_space, 'observation')
        spaces.check_space(made.action_space, 'action')
    except NotImplementedError as error:
        raise ValueError(f'{env}: {error}') from None
    finally:
        made.close()


def _first_line(error):
    """The exception's type and the first line of its message."""
    return f'{type(error).__name__}: {(str(error).strip().splitlines() or [""])[0]}'


def _describe_failure(env, error):
    """Why the environment `env` cannot be made, and for missing simulators how to install them."""
    spec = registration.registry.get(env.split(':')[-1])
    entry_point = str(spec.entry_point) if spec else ''
    for extra in ('mujoco', 'box2d'):
        if f'.{extra}.' in entry_point and isinstance(
                error, (gym.error.DependencyNotInstalled, ImportError)):
            return (f'cannot make environment {env!r}: its simulator is not installed; '
                    f"pip install -e '.[{extra}]' installs it")
    return (f'cannot make environment {env!r}: {error} (a constructor of your own needs '
            f'registering)')


def make_environment(env, max_length=None, normalize_ranges=True, seed=None, render_mode=None,
                     observation_mask=None, env_kwargs=None, previous_action=False):
    """Create one environment of a task with the standard wrappers.

    Args:
      env: Gymnasium id, `module:EnvId` (importing the module registers the id),
        registered spec, or zero-argument constructor of the environment.
      max_length: Episodes are truncated after this many steps; the task's own
        time limit applies if None.
      normalize_ranges: Map finite observation and action ranges to [-1, 1].
      seed: Seed for the environment's random generator, or None.
      render_mode: Gymnasium render mode of an environment given by id or spec,
        such as 'rgb_array' to record videos; passed to `gymnasium.make` only
        when given, since many environments take no such argument.
      observation_mask: Indices of the flattened observation to zero at every
        step (see `wrappers.MaskObservation`); nothing is hidden if None.
      env_kwargs: Arguments of the task, passed to `gymnasium.make` with an id
        or spec; a constructor takes none.
      previous_action: Observe the previous action beside the observation
        (`wrappers.PreviousAction`).

    Raises:
      ValueError: If the Gymnasium id is unknown, its module (of an id
        `module:EnvId`) cannot be imported, the task cannot be made,
        `env_kwargs` come with a constructor, or the graph cannot hold the
        action space.

    Returns:
      Wrapped environment.
    """
    if isinstance(env, (str, registration.EnvSpec)):
        kwargs = dict(env_kwargs or {})
        if render_mode is not None:
            kwargs['render_mode'] = render_mode
        try:
            # Gymnasium's own time limit is set to ours, so it cannot end episodes earlier.
            env = gym.make(env, max_episode_steps=max_length or None, **kwargs)
        except (gym.error.Error, ImportError) as error:
            raise ValueError(_describe_failure(getattr(env, 'id', env), error)) from None
        except Exception as error:  # Whatever the task's constructor raises.
            raise ValueError(
                f'cannot make environment {getattr(env, "id", env)!r}: '
                f'{_first_line(error)}') from None
    elif env_kwargs:
        raise ValueError(
            f'env_kwargs {env_kwargs} apply to a Gymnasium id or spec, not to the constructor '
            f'{env!r}')
    else:
        env = env()
    if observation_mask:
        env = wrappers.MaskObservation(env, observation_mask)
    if previous_action:
        env = wrappers.PreviousAction(env)
    if max_length:
        env = wrappers.LimitDuration(env, max_length)
    if isinstance(env.action_space, gym.spaces.Box):
        if normalize_ranges:
            env = wrappers.RangeNormalize(env)
        env = wrappers.ClipAction(env)
    else:
        try:
            spaces.check_space(env.action_space, 'action')
        except NotImplementedError as error:
            raise ValueError(str(error)) from None
        if normalize_ranges:
            env = wrappers.RangeNormalize(env, action=False)
        if isinstance(env.action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
            env = wrappers.ZeroBasedActions(env)
    env = wrappers.ConvertTo32Bit(env)
    env = wrappers.CacheSpaces(env)
    if seed is not None:
        # Seeds the environment's generator; later resets continue its sequence.
        env.reset(seed=seed)
    return env
