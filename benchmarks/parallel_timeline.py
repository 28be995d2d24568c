"""Where the time of one batch step of ParallelBatchEnv goes, on this machine.

`env_throughput.py` says how fast the `parallel` backend steps; this says why.
Every environment is wrapped so that it records, in shared memory, when each
of its steps started and ended; the calling process records when each
`step(actions)` was called and when it returned. All processes read the same
monotonic clock. For every batch step this gives:

- the start delay of each process that steps environments (a worker, or the
  calling process with `step_in_parent`): its first environment's step start
  minus the call; it covers writing the actions, sending the commands and
  waking the process;
- its stepping time: its last environment's end minus its first one's start;
- the tail: the return minus the end of the last environment to finish, the
  time to wake the caller, read the replies and copy the results;
- the ideal: the largest share of environments times one environment's step
  as the same environments take in a loop in one process, which is what
  a batch step would cost if processes started, stepped and answered for free.

The tables give medians over the measured batch steps, per configuration: the
default (every environment in a worker, with the step timeout), the same
without infos (`return_infos=False`, as training steps), and the calling
process stepping a share (`timeout=None`).

Usage:
  python benchmarks/parallel_timeline.py [--envs Pendulum-v1:32,HalfCheetah-v5:16]
      [--steps 3000]

Writes parallel_timeline.json and .md to benchmarks/results/parallel_timeline/ (or --outdir).
"""

import argparse
import functools
import json
from multiprocessing import shared_memory
import os
import sys
import time

import gymnasium as gym
from lib import reporting
import numpy as np

from agents.tools import envs

WARMUP_STEPS = 300
CONFIGURATIONS = {
    'default (workers only, 60 s timeout)': {},
    'default, return_infos=False': {'return_infos': False},
    '1 worker + caller (timeout=None)': {'num_workers': 1, 'timeout': None},
}


class StepClock(gym.Wrapper):
    """Records the start and end of each step, and the id of the process stepping it."""

    def __init__(self, env, index, memory_name, size, capacity):
        super().__init__(env)
        self._index = index
        self._memory_name = memory_name
        self._size, self._capacity = size, capacity
        self._memory = None
        self._count = 0

    def step(self, action):
        if self._memory is None:  # In the process that steps the environment.
            self._memory = shared_memory.SharedMemory(self._memory_name)
            self._times, self._pids = _clock_arrays(self._memory, self._size, self._capacity)
            self._pids[self._index] = os.getpid()
        start = time.perf_counter()
        result = self.env.step(action)
        if self._count < self._capacity:
            self._times[self._index, self._count] = start, time.perf_counter()
        self._count += 1
        return result

    def close(self):
        if self._memory is not None:
            self._times = self._pids = None
            self._memory.close()
            self._memory = None
        super().close()


class ClockMemory:
    """Shared memory for the `StepClock`s of a batch: step times and host processes."""

    def __init__(self, size, capacity):
        self._size, self._capacity = size, capacity
        self._memory = shared_memory.SharedMemory(create=True, size=8 * size * (2 * capacity + 1))

    def constructors(self, env_id):
        """One constructor per environment of the batch, of `env_id` with a `StepClock`."""
        return [
            functools.partial(
                _make_clocked, env_id, index, self._memory.name, self._size, self._capacity)
            for index in range(self._size)]

    def arrays(self):
        """Copies of the step times [env, step, start/end] and host pids [env]."""
        views = _clock_arrays(self._memory, self._size, self._capacity)
        return tuple(view.copy() for view in views)

    def close(self):
        self._memory.close()
        self._memory.unlink()


def _clock_arrays(memory, size, capacity):
    """Views of the shared memory: step times [env, step, start/end] and host pids [env]."""
    times = np.ndarray((size, capacity, 2), np.float64, memory.buf)
    pids = np.ndarray((size,), np.int64, memory.buf, offset=times.nbytes)
    return times, pids


def _make_clocked(env_id, index, memory_name, size, capacity):
    return StepClock(gym.make(env_id), index, memory_name, size, capacity)


def in_process_step_seconds(env_id, size, steps):
    """Seconds per step of `size` clocked environments stepped in a loop here."""
    clocks = ClockMemory(size, WARMUP_STEPS + steps)
    batch = [constructor() for constructor in clocks.constructors(env_id)]
    try:
        for seed, env in enumerate(batch):
            env.reset(seed=seed)
        action = batch[0].action_space.sample()

        def run(batch_steps):
            for _ in range(batch_steps):
                for env in batch:
                    _, _, terminated, truncated, _ = env.step(action)
                    if terminated or truncated:
                        env.reset()

        run(WARMUP_STEPS)
        start = time.perf_counter()
        run(steps)
        return (time.perf_counter() - start) / steps / size
    finally:
        for env in batch:
            env.close()
        clocks.close()


def timeline(env_id, size, steps, options):
    """Median timings (microseconds) of the batch steps of one configuration."""
    clocks = ClockMemory(size, WARMUP_STEPS + steps)
    try:
        batch = envs.ParallelBatchEnv(
            clocks.constructors(env_id), seeds=list(range(size)), **options)
        try:
            batch.reset()
            space = batch.action_space
            space.seed(size)
            actions = np.stack([space.sample() for _ in range(size)])
            calls = np.empty((WARMUP_STEPS + steps, 2))
            for batch_step in range(len(calls)):
                calls[batch_step, 0] = time.perf_counter()
                batch.step(actions)
                calls[batch_step, 1] = time.perf_counter()
            times, pids = clocks.arrays()
        finally:
            batch.close()
    finally:
        clocks.close()
    times, calls = times[:, WARMUP_STEPS:], calls[WARMUP_STEPS:]
    hosts = {}
    for index, pid in enumerate(pids.tolist()):
        hosts.setdefault(pid, []).append(index)
    shares = []
    for pid, indices in hosts.items():
        first_start = times[indices, :, 0].min(axis=0)
        last_end = times[indices, :, 1].max(axis=0)
        shares.append({
            'process': 'caller' if pid == os.getpid() else f'worker (pid {pid})',
            'envs': len(indices),
            'start_delay_us': float(np.median(first_start - calls[:, 0]) * 1e6),
            'stepping_us': float(np.median(last_end - first_start) * 1e6),
            'last_to_finish': float(np.mean(last_end == times[:, :, 1].max(axis=0))),
        })
    return {
        'batch_step_us': float(np.median(calls[:, 1] - calls[:, 0]) * 1e6),
        'tail_us': float(np.median(calls[:, 1] - times[:, :, 1].max(axis=0)) * 1e6),
        'shares': shares,
    }


def markdown(env_id, size, env_step_us, results):
    """A markdown table of the timelines of every configuration for one task."""
    lines = [
        f'### {env_id}, N={size}',
        '',
        f'One step of one environment (clocked) in a loop in the calling process: '
        f'{env_step_us:.1f} us.',
        '',
        '| configuration | batch step (us) | ideal (us) | process: envs, start delay, '
        'stepping, last to finish | tail (us) |',
        '|---|---|---|---|---|']
    for name, result in results.items():
        ideal = max(share['envs'] for share in result['shares']) * env_step_us
        shares = '; '.join(
            f'{share["process"].split(" (")[0]} {share["envs"]}: '
            f'{share["start_delay_us"]:.0f}, {share["stepping_us"]:.0f}, '
            f'{share["last_to_finish"]:.0%}'
            for share in sorted(result['shares'], key=lambda share: share['process']))
        lines.append(
            f'| {name} | {result["batch_step_us"]:.0f} | {ideal:.0f} | {shares} | '
            f'{result["tail_us"]:.0f} |')
    return '\n'.join(lines)


def _positive(text):
    if not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f'{text!r} is not a positive number of steps.')
    return int(text)


def main():
    """Run the benchmark as the command line asks and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--envs', type=reporting.batch_tasks,
                        default='Pendulum-v1:32,HalfCheetah-v5:16',
                        help='comma-separated env_id:batch_size')
    parser.add_argument('--steps', type=_positive, default=3000, help='measured batch steps')
    parser.add_argument('--outdir', default=reporting.results_dir(__file__))
    args = parser.parse_args()
    load_before = os.getloadavg()
    report = [
        f'Command: {reporting.command_text(__file__)}',
        f'{os.cpu_count()} cores, load average before {load_before[0]:.2f}; medians over '
        f'{args.steps} batch steps after {WARMUP_STEPS} unmeasured ones. Per process: '
        f'environments, start delay (us), stepping time (us), share of batch steps in '
        f'which it finished last.',
        '']
    results = {}
    for env_id, size in args.envs:
        task = f'{env_id}:{size}'
        print(f'{env_id} N={size} ...', file=sys.stderr, flush=True)
        env_step_us = in_process_step_seconds(env_id, size, args.steps) * 1e6
        results[task] = {
            'env_step_us': env_step_us,
            'configurations': {
                name: timeline(env_id, size, args.steps, options)
                for name, options in CONFIGURATIONS.items()}}
        report += [markdown(env_id, size, env_step_us, results[task]['configurations']), '']
    print('\n'.join(report))
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, 'parallel_timeline.json'), 'w') as file:
        json.dump({**reporting.run_record(load_before), 'results': results}, file, indent=2)
    with open(os.path.join(args.outdir, 'parallel_timeline.md'), 'w') as file:
        file.write('\n'.join(report) + '\n')
    print(f'Wrote parallel_timeline.json and .md to {args.outdir}', file=sys.stderr)


if __name__ == '__main__':
    main()
