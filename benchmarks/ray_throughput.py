"""Env steps per second of the Ray backend against the local-process backends.

Steps the same N Pendulum-v1 environments through `BatchEnv` over Ray actors
(one environment per actor, and N/2 per actor), through `BatchEnv` over
`ExternalProcess` workers and through `ParallelBatchEnv`, with `BatchEnv` over
in-process environments as the reference. Each backend is measured in turns,
several times, and the best turn is kept, which is fairer on a shared machine.
The same is repeated with a synthetic environment that burns a fixed amount of
CPU per step (--step_ms), where the backends' overhead matters less.

From the measurements it derives what a step costs each backend beyond the
environment itself (core-milliseconds per env step, when all cores are busy),
the latency of one Ray round trip, the CPU the driver spends per env step
(which caps the Ray backend however many machines it uses), and the crossover:
how many machines the Ray backend needs to beat one machine of local
processes, for a range of environment step costs.

Usage (from the repository root):
  python benchmarks/ray_throughput.py [--envs 8] [--duration 2] [--turns 2]
      [--step_ms 1] [--ray_address ADDRESS]

Prints markdown tables.
"""

import argparse
import os
import platform
import time

import gymnasium
import numpy as np
import ray

from agents.tools import batch_env
from agents.tools import wrappers
from agents.tools.envs import parallel
from agents.tools.envs import ray as ray_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LOCAL_PROCESSES = 'BatchEnv (ExternalProcess)'
IN_PROCESS = 'BatchEnv (in-process)'


class BusyStep(gymnasium.Wrapper):
    """Pendulum that also burns `step_ms` milliseconds of CPU per step."""

    def __init__(self, env, step_ms):
        super().__init__(env)
        self._step_seconds = step_ms / 1000

    def step(self, action):
        end = time.perf_counter() + self._step_seconds
        while time.perf_counter() < end:
            pass
        return self.env.step(action)


def make_constructor(step_ms):
    """Constructor of Pendulum-v1, burning `step_ms` per step if positive."""
    if step_ms:
        return lambda: BusyStep(gymnasium.make('Pendulum-v1'), step_ms)
    return lambda: gymnasium.make('Pendulum-v1')


def backends(num_envs):
    """Dict from backend name to a function(constructor) building a batch env."""
    # Both Ray backends exist at once and each reserves half of the cluster's CPUs.
    share = ray.cluster_resources()['CPU'] / (2 * num_envs)

    def ray_batch(envs_per_actor):
        def build(constructor):
            envs = ray_env.ray_environments(
                [constructor] * num_envs, envs_per_actor=envs_per_actor,
                num_cpus_per_actor=share * envs_per_actor)
            return batch_env.BatchEnv(envs, blocking=False)
        return build

    table = {
        IN_PROCESS: lambda constructor: batch_env.BatchEnv(
            [constructor() for _ in range(num_envs)], blocking=True),
        LOCAL_PROCESSES: lambda constructor: batch_env.BatchEnv(
            [wrappers.ExternalProcess(constructor) for _ in range(num_envs)], blocking=False),
        'ParallelBatchEnv': lambda constructor: parallel.ParallelBatchEnv(
            [constructor] * num_envs),
    }
    table['Ray, 1 env per actor'] = ray_batch(1)
    if num_envs > 1:
        table[f'Ray, {num_envs // 2} envs per actor'] = ray_batch(num_envs // 2)
    return table


def measure(env, actions, duration):
    """Step for about `duration` seconds; return env steps/s and driver CPU s per step."""
    env.reset()
    steps = 0
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start_wall < duration:
        _, _, terminated, truncated, _ = env.step(actions[steps % len(actions)])
        steps += 1
        done = np.flatnonzero(terminated | truncated)
        if len(done):
            env.reset(done)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    env_steps = steps * actions.shape[1]
    return env_steps / wall, cpu / env_steps


def round_trip_ms(env, repeats=300):
    """Median milliseconds of one blocking step of a single environment."""
    action = np.zeros(1, np.float32)
    env.reset(seed=0)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        env.step(action)
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def run_all(num_envs, step_ms, duration, turns):
    """Measure every backend in turns; return {name: (steps/s, driver CPU s/step)}."""
    constructor = make_constructor(step_ms)
    actions = np.random.default_rng(0).uniform(-2, 2, (64, num_envs, 1)).astype(np.float32)
    built = {name: build(constructor) for name, build in backends(num_envs).items()}
    best = {}
    try:
        for _ in range(turns):
            for name, env in built.items():
                result = measure(env, actions, duration)
                if name not in best or result[0] > best[name][0]:
                    best[name] = result
    finally:
        for env in built.values():
            env.close()
    return best


def latencies(step_ms):
    """Round-trip milliseconds of one blocking step: in-process, pipe, Ray."""
    constructor = make_constructor(step_ms)
    local = constructor()
    process = wrappers.ExternalProcess(constructor)
    (remote,) = ray_env.ray_environments([constructor], num_cpus_per_actor=0.5)
    try:
        return {
            'in-process': round_trip_ms(local),
            'ExternalProcess': round_trip_ms(process),
            'Ray actor': round_trip_ms(remote)}
    finally:
        local.close()
        process.close()
        remote.close()


def print_throughput(title, results):
    """Markdown table of env steps/s and ratios to the local-process backend."""
    local = results[LOCAL_PROCESSES][0]
    print(f'\n### {title}\n')
    print('| backend | env steps/s | vs ExternalProcess | driver CPU ms / env step |')
    print('|---|---:|---:|---:|')
    for name, (rate, driver_cpu) in results.items():
        print(f'| {name} | {rate:,.0f} | {rate / local:.2f}x | {1000 * driver_cpu:.3f} |')


def overhead_ms(rate, cores, step_ms, env_ms):
    """Core-ms a backend spends per env step beyond the environment's own step."""
    return 1000 * cores / rate - (env_ms + step_ms)


def main():
    """Run the benchmark as the command line asks and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--envs', type=int, default=8, help='Number of environments N.')
    parser.add_argument('--duration', type=float, default=2.0, help='Seconds per turn.')
    parser.add_argument('--turns', type=int, default=2, help='Turns per backend; best kept.')
    parser.add_argument('--step_ms', type=float, default=1.0,
                        help='CPU ms burnt per step by the synthetic environment.')
    parser.add_argument('--ray_address', default=None,
                        help='Ray cluster to use; a local instance is started by default.')
    args = parser.parse_args()
    cores = os.cpu_count()
    if args.ray_address:
        ray.init(address=args.ray_address, log_to_driver=False)
    else:
        # As many logical CPUs as cores, so the actors share the machine like the
        # local workers do; Ray's workers find this package through PYTHONPATH.
        ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False,
                 runtime_env={'env_vars': {'PYTHONPATH': ROOT}})
    print(f'\n## Ray backend throughput: N={args.envs} envs, {cores} cores, '
          f'{platform.processor() or platform.machine()}, Python '
          f'{platform.python_version()}, Ray {ray.__version__}\n')
    print(f'Load average before: {os.getloadavg()[0]:.1f} (other work on the machine takes '
          f'cores from every backend alike).')

    probe = gymnasium.make('Pendulum-v1')
    env_ms = round_trip_ms(probe, repeats=2000)
    probe.close()
    cheap = run_all(args.envs, 0, args.duration, args.turns)
    print_throughput('Pendulum-v1', cheap)
    costly = run_all(args.envs, args.step_ms, args.duration, args.turns)
    print_throughput(f'Pendulum-v1 + {args.step_ms:g} ms CPU per step', costly)

    trips = latencies(0)
    print('\n### Latency of one blocking step of one Pendulum-v1\n')
    print('| backend | ms per step | overhead vs in-process (ms) |')
    print('|---|---:|---:|')
    for name, value in trips.items():
        print(f'| {name} | {value:.3f} | {value - trips["in-process"]:.3f} |')

    print('\n### Cost per env step beyond the environment (core-ms, all cores busy)\n')
    print(f'Pendulum-v1 step in-process: {env_ms:.4f} ms. Overhead = cores / (steps/s) - '
          f'env step time.\n')
    print('| backend | overhead, Pendulum (core-ms) | overhead, +'
          f'{args.step_ms:g} ms env (core-ms) | max env steps/s of the driver |')
    print('|---|---:|---:|---:|')
    overheads = {}
    for name in cheap:
        overheads[name] = overhead_ms(cheap[name][0], cores, 0, env_ms)
        costly_overhead = overhead_ms(costly[name][0], cores, args.step_ms, env_ms)
        driver_limit = 1 / cheap[name][1]
        print(f'| {name} | {overheads[name]:.3f} | {costly_overhead:.3f} | '
              f'{driver_limit:,.0f} |')

    print_crossover(overheads, cheap, env_ms, args.envs, cores)
    ray_name = f'Ray, {args.envs // 2} envs per actor'
    if ray_name in costly:
        measured = costly[ray_name][0] / costly[LOCAL_PROCESSES][0]
        print(f'Measured with the {args.step_ms:g} ms environment: Ray / local = '
              f'{measured:.2f}x (the model above, from Pendulum alone, is conservative: part '
              f"of Ray's overhead is waiting, which costly environments hide).")
    print(f'\nLoad average after: {os.getloadavg()[0]:.1f}.')


def print_crossover(overheads, cheap, env_ms, num_envs, cores):
    """Machines the Ray backend needs to beat one machine of local processes.

    With every core busy, one machine of local processes makes
    cores / (c + o_local) env steps/s for an env step of c ms; M machines of Ray
    actors make M * cores / (c + o_ray), capped by the driver at
    1 / (driver CPU per env step). Ray wins once M > (c + o_ray) / (c + o_local)
    and while the driver keeps up (else it never wins).
    """
    local = overheads[LOCAL_PROCESSES]
    ray_name = f'Ray, {num_envs // 2} envs per actor'
    if ray_name not in overheads:
        ray_name = 'Ray, 1 env per actor'
    ray_cost = overheads[ray_name]
    driver_cpu_ms = 1000 * cheap[ray_name][1]
    print(f'\n### Crossover ({ray_name} vs {LOCAL_PROCESSES})\n')
    print(f'o_ray = {ray_cost:.3f} core-ms, o_local = {local:.3f} core-ms per env step; the '
          f'driver spends {driver_cpu_ms:.3f} ms per env step, so the Ray backend tops out '
          f'near {1000 / driver_cpu_ms:,.0f} env steps/s per driver.\n')
    print('| env step cost c (ms) | Ray / local on 1 machine | machines for Ray to win |')
    print('|---:|---:|---:|')
    for cost in (env_ms, 0.1, 1.0, 10.0, 100.0):
        ratio = (cost + local) / (cost + ray_cost)
        machines = int(np.floor((cost + ray_cost) / (cost + local))) + 1
        local_rate = 1000 * cores / (cost + local)
        if local_rate >= 1000 / driver_cpu_ms:
            machines = 'never (driver-bound)'
        print(f'| {cost:.3g} | {ratio:.2f}x | {machines} |')
    within_ten_percent = max(0.0, 9 * ray_cost - 10 * local)
    print(f'\nModel: on one machine the Ray backend is within 10% of local processes once an '
          f'env step costs >= {within_ten_percent:.2f} ms.')


if __name__ == '__main__':
    main()
