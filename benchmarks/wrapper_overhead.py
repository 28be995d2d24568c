"""Cost per step of the wrappers every training environment is built with.

For each task, times one environment step (with a fixed action, resetting
when an episode ends) of three builds of the same environment, in one
process:

- raw env: the task's environment class alone (`gymnasium.make(...).unwrapped`);
- gym.make: `gymnasium.make` with the config's time limit (Gymnasium's
  PassiveEnvChecker, OrderEnforcing and TimeLimit);
- our stack: the environment training steps, built by
  `agents.scripts.environments` from the task's config (LimitDuration,
  RangeNormalize, ClipAction, ConvertTo32Bit and CacheSpaces around it).

The builds are timed in turns, several times each, and the best turn is kept,
which makes the comparison fairer on a machine shared with other work. The
overhead is our stack's time minus the raw environment's.

Usage:
  python benchmarks/wrapper_overhead.py [--configs pendulum,cartpole,cheetah]
      [--steps 20000] [--repeats 5] [--outdir benchmarks/results/wrapper_overhead]
      [--title T] [--append]

Prints a markdown table of microseconds per step and writes it to
wrapper_overhead.md in --outdir (or adds it there, with --append). The
script measures the installed `agents` package (or the one on PYTHONPATH).
"""

import argparse
import datetime
import os
import platform
import time

import gymnasium as gym
from lib import reporting
import numpy as np

from agents.scripts import environments
from agents.scripts import run_api

BUILDS = ('raw env', 'gym.make', 'our stack')


def builds(config_name):
    """The task's id and its three builds, each a zero-argument constructor.

    Args:
      config_name: Name of a configuration in agents/scripts/configs.py.

    Returns:
      The Gymnasium id and a dict from build name to constructor.
    """
    config = run_api.make_config(config_name)
    ours = environments.environment_constructors(config, 1)[0]
    return config.env, {
        'raw env': lambda: gym.make(config.env).unwrapped,
        'gym.make': lambda: gym.make(config.env, max_episode_steps=config.max_length),
        'our stack': ours}


def fixed_action(space):
    """The action every step takes: zeros of a Box, 0 of a Discrete space."""
    if isinstance(space, gym.spaces.Box):
        return np.zeros(space.shape, space.dtype)
    return space.dtype.type(0)


def time_steps(env, steps):
    """CPU microseconds per step of `steps` steps of `env`, resetting finished episodes.

    CPU time of this thread, which other load on the machine changes less than
    the time that passes.
    """
    action = fixed_action(env.action_space)
    env.reset(seed=0)
    start = time.thread_time()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return (time.thread_time() - start) / steps * 1e6


def measure(config_name, steps, repeats):
    """The task's id and the best microseconds per step of each build."""
    env_id, constructors = builds(config_name)
    envs = {name: constructor() for name, constructor in constructors.items()}
    best = dict.fromkeys(BUILDS, float('inf'))
    for _ in range(repeats):
        for name in BUILDS:
            best[name] = min(best[name], time_steps(envs[name], steps))
    for env in envs.values():
        env.close()
    return env_id, best


def table(results):
    """A markdown table of the results, one row per task."""
    lines = [
        '| task | raw env (us/step) | gym.make (us/step) | our stack (us/step) '
        '| overhead: our stack - raw (us/step) |',
        '|---|---|---|---|---|']
    for env_id, best in results:
        raw, made, ours = (best[name] for name in BUILDS)
        lines.append(f'| {env_id} | {raw:.1f} | {made:.1f} | {ours:.1f} '
                     f'| {ours - raw:.1f} ({ours / raw:.1f}x) |')
    return '\n'.join(lines)


def main():
    """Measure the configs' builds, print the table and write it to --outdir."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--configs', default='pendulum,cartpole,cheetah')
    parser.add_argument('--steps', type=int, default=20000)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--outdir', default=reporting.results_dir(__file__))
    parser.add_argument('--title', default='Wrapper overhead', help='Heading of the table.')
    parser.add_argument(
        '--append', action='store_true',
        help='Add the table to wrapper_overhead.md instead of replacing the file, for '
             'example to keep the numbers of an older checkout beside the current ones.')
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results = [measure(name, args.steps, args.repeats) for name in args.configs.split(',')]
    header = (
        f'Command: python benchmarks/wrapper_overhead.py --configs {args.configs} '
        f'--steps {args.steps} --repeats {args.repeats}\n'
        f'{datetime.date.today()}, Python {platform.python_version()}, gymnasium '
        f'{gym.__version__}, NumPy {np.__version__}, {os.cpu_count()} cores, load average '
        f'before {load_before:.2f}, after {os.getloadavg()[0]:.2f}; best of {args.repeats} '
        f'turns of {args.steps} steps per build, with a fixed action, resetting ended '
        f'episodes; CPU time per step.\n')
    text = f'### {args.title}\n\n{header}\n{table(results)}\n'
    print(text)
    os.makedirs(args.outdir, exist_ok=True)
    path = os.path.join(args.outdir, 'wrapper_overhead.md')
    with open(path, 'a' if args.append else 'w') as file:
        file.write(f'\n{text}' if args.append else text)


if __name__ == '__main__':
    main()
