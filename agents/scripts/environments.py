"""Create the environments of a configured task; free of TensorFlow.

Worker processes import this module to build their environment, so it imports
only Gymnasium and the pure-Python tools.
"""

import functools

import gymnasium as gym

from agents.tools import wrappers


def environment_constructors(config, count, render_mode=None):
    """One zero-argument constructor per environment, each with its own seed.

    Environment `i` is seeded with `1000 * config.seed + i`, so runs with one
    seed see the same observations, and runs with different seeds share no
    environment seed.

    Args:
      config: Configuration with `env`, `max_length`, `normalize_ranges` and
        optionally `seed`.
      count: Number of environments.
      render_mode: Gymnasium render mode, such as 'rgb_array' for videos.

    Returns:
      List of constructors.
    """
    seed = config.get('seed')
    return [
        functools.partial(
            make_environment, config.env, config.max_length, config.normalize_ranges,
            None if seed is None else 1000 * seed + index, render_mode)
        for index in range(count)]


def make_environment(env, max_length=None, normalize_ranges=True, seed=None, render_mode=None):
    """Create one environment of a task with the standard wrappers.

    Args:
      env: Gymnasium id or zero-argument constructor of the environment.
      max_length: Episodes are truncated after this many steps; the task's own
        time limit applies if None.
      normalize_ranges: Map finite observation and action ranges to [-1, 1].
      seed: Seed for the environment's random generator, or None.
      render_mode: Gymnasium render mode of an environment given by id, such as
        'rgb_array' to record videos.

    Raises:
      ValueError: If the Gymnasium id is unknown or the action space is neither
        Box nor Discrete.

    Returns:
      Wrapped environment.
    """
    if isinstance(env, str):
        try:
            # Gymnasium's own time limit is set to ours, so it cannot end episodes earlier.
            env = gym.make(env, max_episode_steps=max_length or None, render_mode=render_mode)
        except gym.error.Error as error:
            raise ValueError(f'Cannot make environment {env!r}: {error}') from None
    else:
        env = env()
    if max_length:
        env = wrappers.LimitDuration(env, max_length)
    if isinstance(env.action_space, gym.spaces.Box):
        if normalize_ranges:
            env = wrappers.RangeNormalize(env)
        env = wrappers.ClipAction(env)
    elif isinstance(env.action_space, gym.spaces.Discrete):
        if normalize_ranges:
            env = wrappers.RangeNormalize(env, action=False)
    else:
        raise ValueError(
            f'Unsupported action space {env.action_space}: use Box or Discrete actions.')
    env = wrappers.ConvertTo32Bit(env)
    env = wrappers.CacheSpaces(env)
    if seed is not None:
        # Seeds the environment's generator; later resets continue its sequence.
        env.reset(seed=seed)
    return env
