"""Environment steps per second of batched-environment backends, in one run.

Compares, for Pendulum-v1 and HalfCheetah-v5 at batch sizes 1 to 32: a plain
Python loop over in-process environments, Gymnasium's SyncVectorEnv and
AsyncVectorEnv (shared memory), this project's `BatchEnv` over in-process
environments and over `ExternalProcess` workers, `ParallelBatchEnv` (its
default settings, other worker counts, and processes that never poll before
they sleep), and raw envpool beside the
`envpool` backend (`EnvpoolBatchEnv`, without infos as training uses it).
Every backend steps the same pre-generated random actions and resets finished
episodes, so only stepping is measured. Backends are measured in turns,
several times each, and the best turn is kept, which makes the comparison
fairer on a machine shared with other work.

Usage:
  python benchmarks/env_throughput.py [--quick] [--envs Pendulum-v1] [--sizes 8,32]
      [--backends SyncVector,Async] [--duration 0.5] [--repeats 6]

Prints markdown tables of env-steps/s, of ParallelBatchEnv's speed-up over
each peer, and of the CPU time per env-step summed over all processes of a
backend (a measure of the work done that other load on the machine barely
changes), and how many cores ParallelBatchEnv kept busy stepping environments
(at most 1 when the machine has no idle core for its workers). Writes env_throughput.json, .md
and .png to benchmarks/results/env_throughput/ (or
--outdir).
"""

import argparse
import functools
import json
import os
import sys
import time

import gymnasium as gym
from lib import reporting
import numpy as np

from agents.tools import envs

DEFAULT = 'ParallelBatchEnv (default)'
# Distinct action batches cycled through; pre-generated so sampling is not timed.
ACTION_BATCHES = 64
ENVPOOL = 'EnvpoolBatchEnv'
RAW_ENVPOOL = 'envpool (raw)'
TARGETS = (
    # (environment, batch size, backend, peer, minimum speed-up of the backend)
    ('Pendulum-v1', 32, DEFAULT, 'gymnasium AsyncVectorEnv', 8.0),
    ('Pendulum-v1', 32, DEFAULT, 'gymnasium SyncVectorEnv', 1.5),
    ('HalfCheetah-v5', 16, DEFAULT, 'gymnasium SyncVectorEnv', 1.5),
    ('Pendulum-v1', 32, ENVPOOL, RAW_ENVPOOL, 0.9),
    ('HalfCheetah-v5', 16, ENVPOOL, RAW_ENVPOOL, 0.9),
)


class StepTimer(gym.Wrapper):
    """Adds up the CPU time spent in `step`, to see whether processes overlapped."""

    def __init__(self, env):
        super().__init__(env)
        self.step_seconds = 0.0

    def step(self, action):
        start = time.thread_time()
        result = self.env.step(action)
        self.step_seconds += time.thread_time() - start
        return result


def timed_env(env_id):
    """The environment `env_id` with a `StepTimer` around it."""
    return StepTimer(gym.make(env_id))


class InProcessLoop:
    """The baseline: a Python loop stepping in-process environments one by one."""

    def __init__(self, constructor, size):
        self._envs = [constructor() for _ in range(size)]
        for seed, env in enumerate(self._envs):
            env.reset(seed=seed)

    def step(self, actions):
        observs = []
        for env, action in zip(self._envs, actions):
            observ, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
            observs.append(observ)
        return np.stack(observs)

    def close(self):
        for env in self._envs:
            env.close()


class GymnasiumVector:
    """Gymnasium's vector environments, which reset finished episodes themselves."""

    def __init__(self, constructor, size, asynchronous):
        constructors = [constructor] * size
        if asynchronous:
            self._env = gym.vector.AsyncVectorEnv(constructors, shared_memory=True)
        else:
            self._env = gym.vector.SyncVectorEnv(constructors)
        self._env.reset(seed=0)

    def step(self, actions):
        return self._env.step(actions)[0]

    def close(self):
        self._env.close()


class RawEnvpool:
    """envpool's own pool of a task, which resets finished episodes on their next step."""

    def __init__(self, env_id, size):
        import envpool  # Imported late: an optional dependency.
        self._pool = envpool.make_gymnasium(env_id, num_envs=size, batch_size=size)
        self._pool.reset()

    def step(self, actions):
        return self._pool.step(actions)[0]

    def close(self):
        self._pool.close()


class ProjectBatch:
    """A BatchEnv-like object of this project; resets finished episodes by index."""

    def __init__(self, env):
        self._env = env
        self._env.reset()

    def step(self, actions):
        observ, _, terminated, truncated, _ = self._env.step(actions)
        done = np.flatnonzero(terminated | truncated)
        if len(done):
            self._env.reset(done)
        return observ

    def close(self):
        self._env.close()


def backends(env_id):
    """Dict from backend name to a function of the batch size building it for `env_id`.

    A backend that cannot be built (for example a module not written yet)
    raises when built; its rows are then skipped.
    """
    constructor = functools.partial(gym.make, env_id)

    def external_processes(size):
        return ProjectBatch(envs.ProcessBatchEnv([constructor] * size))

    def parallel(size, **kwargs):
        return ProjectBatch(envs.ParallelBatchEnv([constructor] * size, **kwargs))

    return {
        'in-process loop': functools.partial(InProcessLoop, constructor),
        'gymnasium SyncVectorEnv': functools.partial(
            GymnasiumVector, constructor, asynchronous=False),
        'gymnasium AsyncVectorEnv': functools.partial(
            GymnasiumVector, constructor, asynchronous=True),
        'BatchEnv (in-process)': lambda size: ProjectBatch(envs.BatchEnv(
            [constructor() for _ in range(size)], blocking=True)),
        'BatchEnv (ExternalProcess)': external_processes,
        DEFAULT: parallel,
        'ParallelBatchEnv (1 worker + parent)': functools.partial(
            parallel, num_workers=1, step_in_parent=True),
        'ParallelBatchEnv (2 workers, parent waits)': functools.partial(
            parallel, num_workers=2, step_in_parent=False),
        'ParallelBatchEnv (2 workers + parent)': functools.partial(
            parallel, num_workers=2, step_in_parent=True),
        'ParallelBatchEnv (return_infos=False)': functools.partial(
            parallel, return_infos=False),
        # The default before workers and parent polled before sleeping.
        'ParallelBatchEnv (spin_seconds=0, never polls)': functools.partial(
            parallel, spin_seconds=0),
        RAW_ENVPOOL: functools.partial(RawEnvpool, env_id),
        ENVPOOL: lambda size: ProjectBatch(
            envs.EnvpoolBatchEnv([constructor] * size, return_infos=False)),
    }


def process_tree_cpu_seconds(pid=None):
    """CPU seconds (user and system) used so far by a process and its descendants."""
    pid = pid or os.getpid()
    try:
        with open(f'/proc/{pid}/stat') as stat:
            fields = stat.read().rsplit(')', 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
        children = []
        for task in os.listdir(f'/proc/{pid}/task'):
            with open(f'/proc/{pid}/task/{task}/children') as listing:
                children += listing.read().split()
    except (FileNotFoundError, ProcessLookupError):  # The process just ended.
        return 0.0
    return total + sum(process_tree_cpu_seconds(int(child)) for child in children)


def measure(backend, actions, duration):
    """Step `backend` for about `duration` seconds.

    Returns:
      Env-steps per second, and CPU microseconds per env-step summed over this
      process and all its descendants (the work done, whatever the wall time).
    """
    batch_steps = 0
    cpu_start = process_tree_cpu_seconds()
    start = time.perf_counter()
    while True:
        backend.step(actions[batch_steps % len(actions)])
        batch_steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= duration:
            env_steps = batch_steps * actions.shape[1]
            cpu = process_tree_cpu_seconds() - cpu_start
            return env_steps / elapsed, cpu / env_steps * 1e6


def benchmark_size(env_id, size, duration, repeats, only=None):
    """Measure every backend for one environment and batch size.

    Returns:
      Dicts from backend name to the best env-steps/s and to the median CPU
      microseconds per env-step, and the cores the default ParallelBatchEnv kept
      busy stepping.
    """
    space = gym.make(env_id).action_space
    space.seed(size)
    actions = np.stack([
        np.stack([space.sample() for _ in range(size)]) for _ in range(ACTION_BATCHES)])
    built = {}
    for name, build in backends(env_id).items():
        if only and name != DEFAULT and not any(part in name for part in only):
            continue
        try:
            built[name] = build(size)
        except Exception as error:  # Report and go on with the other backends.
            print(f'  skipping {name}: {type(error).__name__}: {error}', file=sys.stderr)
    try:
        for backend in built.values():
            measure(backend, actions, min(0.2, duration))  # Warm up.
        best = {name: 0.0 for name in built}
        cpu = {name: [] for name in built}
        for _ in range(repeats):
            for name, backend in built.items():
                rate, cpu_per_step = measure(backend, actions, duration)
                best[name] = max(best[name], rate)
                cpu[name].append(cpu_per_step)
    finally:
        for backend in built.values():
            backend.close()
    cpu = {name: float(np.median(values)) for name, values in cpu.items()}
    return best, cpu, cores_busy_stepping(env_id, size, actions, duration)


def cores_busy_stepping(env_id, size, actions, duration, turns=3):
    """How many cores the default ParallelBatchEnv kept busy stepping, on average.

    The CPU time spent in the environments' `step`, summed over all of them and
    divided by the wall time (best of a few turns of at least a second): close
    to the number of workers when they overlap, at most 1 when the machine
    serializes them because it has no idle core for them.
    """
    env = envs.ParallelBatchEnv([functools.partial(timed_env, env_id)] * size)
    backend = ProjectBatch(env)
    best = 0.0
    try:
        measure(backend, actions, min(0.2, duration))
        for _ in range(turns):
            before = sum(env.call('step_seconds'))
            start = time.perf_counter()
            measure(backend, actions, max(1.0, duration))
            busy = sum(env.call('step_seconds')) - before
            best = max(best, busy / (time.perf_counter() - start))
    finally:
        backend.close()
    return best


def markdown_tables(env_id, results, cpu, busy_cores, sizes):
    """Tables of env-steps/s, of the default's speed-up over peers, and of CPU cost."""
    names = list(dict.fromkeys(name for size in sizes for name in results[str(size)]))
    header = '| ' + ' | '.join(f'N={size}' for size in sizes) + ' |'
    rule = '|---' * (len(sizes) + 1) + '|'
    lines = [f'### {env_id}: env-steps/s (best turn)', '', '| backend ' + header, rule]
    for name in names:
        cells = [results[str(size)].get(name) for size in sizes]
        lines.append(f'| {name} | ' + ' | '.join(
            '-' if value is None else f'{value / 1000:.1f}k' for value in cells) + ' |')
    lines += ['', f'### {env_id}: speed-up of {DEFAULT} over each peer', '',
              '| peer ' + header, rule]
    for name in names:
        if name == DEFAULT:
            continue
        cells = []
        for size in sizes:
            ours, peer = results[str(size)].get(DEFAULT), results[str(size)].get(name)
            cells.append('-' if not ours or not peer else f'{ours / peer:.2f}x')
        lines.append(f'| {name} | ' + ' | '.join(cells) + ' |')
    lines += ['', f'### {env_id}: CPU microseconds per env-step, all processes (median turn)',
              '', '| backend ' + header, rule]
    for name in names:
        cells = [cpu[str(size)].get(name) for size in sizes]
        lines.append(f'| {name} | ' + ' | '.join(
            '-' if value is None else f'{value:.0f}' for value in cells) + ' |')
    lines += ['', f'{DEFAULT}: cores busy stepping environments, on average (CPU time in '
              f'env.step summed over envs / wall time, best of 3 turns): ' + ', '.join(
                  f'N={size}: {busy_cores[str(size)]:.2f}' for size in sizes)]
    return '\n'.join(lines)


def check_targets(results):
    """Lines saying whether each target of the issue is met."""
    lines = []
    for env_id, size, backend, peer, minimum in TARGETS:
        row = results.get(env_id, {}).get(str(size), {})
        if backend not in row or peer not in row:
            continue
        ratio = row[backend] / row[peer]
        verdict = 'met' if ratio >= minimum else 'NOT met'
        lines.append(f'- {env_id}, N={size}: {backend} at {ratio:.2f}x {peer} '
                     f'(target >= {minimum}x): {verdict}')
    return lines


def plot(results, sizes, path, note):
    """Save env-steps/s against batch size, one panel per environment, titled `note`."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt
    figure, axes = plt.subplots(
        1, len(results), figsize=(7 * len(results), 5), squeeze=False)
    for axis, (env_id, by_size) in zip(axes[0], results.items()):
        names = list(dict.fromkeys(name for size in sizes for name in by_size[str(size)]))
        for name in names:
            points = [(size, by_size[str(size)][name]) for size in sizes
                      if name in by_size[str(size)]]
            style = dict(linewidth=3) if name == DEFAULT else dict(linewidth=1.3)
            axis.plot(*zip(*points), marker='o', label=name, **style)
        axis.set_xscale('log', base=2)
        axis.set_yscale('log')
        axis.set_xticks(sizes, [str(size) for size in sizes])
        axis.set_xlabel('number of environments N')
        axis.set_ylabel('env-steps/s')
        axis.set_title(env_id)
        axis.grid(True, which='both', alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.suptitle(note, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main():
    """Run the benchmark as the command line asks and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='shorter measurements (0.25 s, 3 turns) for a fast check')
    parser.add_argument('--envs', default='Pendulum-v1,HalfCheetah-v5')
    parser.add_argument('--sizes', default='1,2,4,8,16,32')
    parser.add_argument('--backends', help='comma-separated parts of backend names to '
                        'measure (besides the default ParallelBatchEnv), e.g. SyncVector,loop')
    parser.add_argument('--duration', type=float, help='seconds per measurement turn')
    parser.add_argument('--repeats', type=int, help='measurement turns per backend')
    parser.add_argument('--outdir', default=reporting.results_dir(__file__))
    args = parser.parse_args()
    duration = args.duration or (0.25 if args.quick else 0.5)
    repeats = args.repeats or (3 if args.quick else 6)
    sizes = [int(size) for size in args.sizes.split(',')]
    results, cpu, busy_cores = {}, {}, {}
    load_before = os.getloadavg()
    for env_id in args.envs.split(','):
        results[env_id], cpu[env_id], busy_cores[env_id] = {}, {}, {}
        for size in sizes:
            print(f'{env_id} N={size} ...', file=sys.stderr, flush=True)
            (results[env_id][str(size)], cpu[env_id][str(size)],
             busy_cores[env_id][str(size)]) = benchmark_size(
                env_id, size, duration, repeats,
                args.backends.split(',') if args.backends else None)
    report = [
        f'Command: {reporting.command_text(__file__)}',
        f'{os.cpu_count()} cores, load average before {load_before[0]:.2f}, after '
        f'{os.getloadavg()[0]:.2f}; best of {repeats} turns of {duration} s per backend. '
        f'{DEFAULT}: {os.cpu_count()} worker(s) and the 60 s step timeout, which keeps '
        f'every environment out of the parent.',
        '']
    for env_id in results:
        report += [markdown_tables(
            env_id, results[env_id], cpu[env_id], busy_cores[env_id], sizes), '']
    report += ['Targets:'] + check_targets(results)
    print('\n'.join(report))
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, 'env_throughput.json'), 'w') as file:
        json.dump({
            **reporting.run_record(load_before), 'duration': duration, 'repeats': repeats,
            'env_steps_per_second': results, 'cpu_us_per_env_step': cpu,
            'default_cores_busy_stepping': busy_cores}, file, indent=2)
    with open(os.path.join(args.outdir, 'env_throughput.md'), 'w') as file:
        file.write('\n'.join(report) + '\n')
    note = (f'{os.cpu_count()} cores, load average {load_before[0]:.1f} to '
            f'{os.getloadavg()[0]:.1f}, best of {repeats} turns of {duration} s')
    plot(results, sizes, os.path.join(args.outdir, 'env_throughput.png'), note)
    print(f'Wrote env_throughput.json, .md and .png to {args.outdir}', file=sys.stderr)


if __name__ == '__main__':
    main()
