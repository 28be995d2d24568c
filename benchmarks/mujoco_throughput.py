r"""A whole HalfCheetah-v5 training run against SB3 PPO, and against the machine's limits.

Trains the `cheetah` config on rl-baselines3-zoo's HalfCheetah schedule,
pinned in `lib/zoo_schedule.py` (8 environments, rollouts of 64 steps, 256-256
ReLU networks, minibatches of 64 and 20 epochs: 160 gradient steps per 512
environment steps) whatever the shipped config says, and Stable-Baselines3 PPO
set up to do exactly the same work: 8 environments in a `DummyVecEnv` (SB3's
default) with `VecNormalize`, the same networks, initial standard deviation
and optimizer settings, PyTorch on one thread (faster on 2 cores than two
threads beside the environments). Both make the same number of environment
steps and gradient steps; only training time counts (our periodic evaluations
are timed apart).

For SB3, a callback splits the time into collection and update. For ours, the
update runs inside the same TensorFlow `session.run` as collection, so the
collection rate is measured apart (the policy acting without learning), and
the update's time is the training time less the collection's. Beside them:

- the env-only rate: the same 8 environments on the same backend, stepped
  with random actions and no TensorFlow, the bound of collection;
- the machine's FP32 matmul peak, measured in the training process with the
  session settings of training: the best of 5 runs of a 2048x2048x2048
  float32 matmul;
- the update's arithmetic: the FLOPs of each gradient step's matrix products
  (forward, and backward to the weights and hidden layers) times the steps;
- the first graph run: the first phase's time beyond the later phases' rate
  (graph optimization and XLA compilation);
- resident memory of the trainer and its workers: at every evaluation, and
  the sum of each process's peak (its high-water mark), which bounds the
  peak of the whole from above.

    python benchmarks/mujoco_throughput.py                 # 1M steps each: about 25 minutes
    python benchmarks/mujoco_throughput.py --steps=100000  # minutes

Writes mujoco_throughput.md and .json to benchmarks/results/mujoco_throughput/ (or --out).
Both libraries use both cores; run nothing else meanwhile.
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

from lib import reporting
from lib import resident_memory
from lib import training_loop
from lib import zoo_schedule

CONFIG = 'cheetah'
ENV = 'HalfCheetah-v5'


def _cheetah_config(steps, eval_every):
    from agents.scripts import run_api
    config = run_api.make_config(CONFIG)
    with config.unlocked():
        config.update(zoo_schedule.SCHEDULE)
        config.update(steps=steps, eval_every=eval_every, eval_episodes=1, seed=0)
    return config


def measure_agents(steps, eval_every, backend):
    """Train the pinned schedule for `steps`, then measure the matmul peak.

    Returns:
      Dict of the training seconds, each training phase's steps and seconds,
      memory samples, the peak in GFLOP/s and the config's `gradient_graph`.
    """
    from absl import logging

    from agents.scripts import train
    logging.set_verbosity(logging.WARNING)
    config = _cheetah_config(steps, eval_every)
    seconds, phases, memory, last_step = 0.0, [], [], 0
    with (tempfile.TemporaryDirectory() as logdir,
          resident_memory.MemorySampler() as sampler):
        for result in train.train(config, logdir, backend):
            if result.phase == 'train':
                seconds += result.seconds
                phases.append((result.step - last_step, result.seconds))
                last_step = result.step
            else:
                memory.append((result.step, resident_memory.resident_megabytes()))
                print(f'agents: step {result.step:,}, {seconds / 60:.1f} min training, '
                      f'{memory[-1][1]:,.0f} MiB', flush=True)
    # After training, so that its matrices are not in the run's memory.
    peak = zoo_schedule.matmul_peak()
    return dict(seconds=seconds, phases=phases, memory=memory, peak_memory=sampler.peak_megabytes,
                peak_gflops=peak, gradient_graph=config.gradient_graph)


def measure_env_only(steps, backend):
    """Env steps per second of the schedule's environments alone: random actions, no TensorFlow."""
    import numpy as np

    from agents.scripts import environments
    from agents.tools import envs
    config = _cheetah_config(steps, steps)
    batch_env = envs.make_batch_env(
        backend, environments.environment_constructors(config, config.num_agents),
        return_infos=False)
    try:
        random = np.random.default_rng(0)
        # The training env's action space may be unbounded; HalfCheetah's own is [-1, 1].
        low = np.maximum(batch_env.action_space.low, -1)
        high = np.minimum(batch_env.action_space.high, 1)
        actions = random.uniform(low, high, (64, config.num_agents, *low.shape))
        actions = actions.astype(batch_env.action_space.dtype)
        batch_env.reset()
        done = np.zeros(config.num_agents, bool)
        start = time.perf_counter()
        for index in range(steps // config.num_agents):
            # As training steps them: an ended episode resets in place of its next step.
            _, _, terminated, truncated = batch_env.step_or_reset(
                actions[index % len(actions)], done)[:4]
            done = terminated | truncated
        return steps / (time.perf_counter() - start)
    finally:
        batch_env.close()


def measure_agents_collection(steps, backend):
    """Env steps per second of our policy and environments alone, without learning."""
    config = _cheetah_config(steps, steps)
    updates = max(steps // (config.rollout_length * config.num_agents), 1)
    return training_loop.measure_batchppo(
        config, updates, backend, config.steps_per_run, is_training=False)


def measure_sb3(steps, config):
    """Train SB3 PPO doing our config's work; return training, collection and update seconds."""
    from agents.tools import load_order
    load_order.load_triton_before_tensorflow()  # Before SB3 loads TensorFlow.
    import stable_baselines3
    from stable_baselines3.common import callbacks
    from stable_baselines3.common import env_util
    from stable_baselines3.common import vec_env
    import torch
    env = vec_env.VecNormalize(
        env_util.make_vec_env(ENV, n_envs=config['num_agents'], seed=0),
        gamma=config['discount'])
    model = stable_baselines3.PPO(
        'MlpPolicy', env, n_steps=config['rollout_length'],
        batch_size=config['minibatch_size'], n_epochs=config['update_epochs'],
        learning_rate=config['learning_rate'], gamma=config['discount'],
        gae_lambda=config['gae_lambda'], clip_range=config['clip_ratio'],
        ent_coef=config['entropy_coef'], max_grad_norm=config['max_gradient_norm'],
        seed=0, device='cpu', policy_kwargs=dict(
            net_arch=dict(pi=list(config['policy_layers']), vf=list(config['value_layers'])),
            activation_fn=torch.nn.ReLU, log_std_init=math.log(config['init_std']),
            ortho_init=False))

    class Clock(callbacks.BaseCallback):
        """Times collection (rollouts) apart from the updates between them."""

        def __init__(self):
            super().__init__()
            self.collection, self.started = 0.0, None

        def _on_rollout_start(self):
            self.started = time.perf_counter()

        def _on_rollout_end(self):
            self.collection += time.perf_counter() - self.started

        def _on_step(self):
            return True

    clock = Clock()
    start = time.perf_counter()
    model.learn(total_timesteps=steps, callback=clock)
    seconds = time.perf_counter() - start
    return dict(seconds=seconds, collection=clock.collection,
                update=seconds - clock.collection)


def table(steps, agents, collection_rate, env_rate, sb3):
    """Markdown tables of the measurements, and the issue's targets against them."""
    collection = steps / collection_rate
    update = zoo_schedule.update_seconds(steps, agents, collection_rate)
    steps_of_update = zoo_schedule.gradient_steps(steps)
    flops = zoo_schedule.gradient_step_flops(zoo_schedule.OBSERV_SIZE, zoo_schedule.ACTION_SIZE)
    achieved = steps_of_update * flops / update / 1e9
    (first_steps, first_seconds), later = agents['phases'][0], agents['phases'][1:]
    later_rate = (sum(each for each, _ in later) / sum(seconds for _, seconds in later)
                  if later else first_steps / first_seconds)
    first_run = first_seconds - first_steps / later_rate
    ratio = agents['seconds'] / sb3['seconds'] if sb3 else None

    def row(name, seconds, parts):
        versus = f'{seconds / sb3["seconds"]:.2f}x' if sb3 else 'n/a'
        return (f'| {name} | {steps / seconds:,.0f} | {seconds / 60:.1f} min | '
                f'{seconds / 60 * 1e6 / steps:.1f} min | {parts} | {versus} |')

    lines = [
        f'**{ENV}**, {steps:,} training steps of rl-baselines3-zoo\'s schedule (160 gradient '
        'steps of 64 samples per 512 env steps)\n',
        '| trainer | env steps/s | training time | per 1M steps | collection / update | '
        'wall time vs SB3 |', '|---|---:|---:|---:|---|---:|',
        row(f'agents (parallel backend, gradient_graph={agents["gradient_graph"]!r})',
            agents['seconds'], f'{collection / 60:.1f} / {update / 60:.1f} min')]
    if sb3:
        lines.append(row(
            'SB3 PPO (DummyVecEnv + VecNormalize)', sb3['seconds'],
            f'{sb3["collection"] / 60:.1f} / {sb3["update"] / 60:.1f} min'))
    lines += [
        '\nWhere our time goes:\n',
        '| part | measured | against |', '|---|---:|---|',
        f'| collection (policy acting, no learning) | {collection_rate:,.0f} env steps/s | '
        f'{collection_rate / env_rate:.0%} of the env-only rate, {env_rate:,.0f} env steps/s |',
        f'| update, loop included | {update / 60:.1f} min, {update / steps_of_update * 1e3:.3f} '
        f'ms per gradient step ({steps_of_update:,} steps) | |',
        f'| update arithmetic | {achieved:.0f} GFLOP/s | {achieved / agents["peak_gflops"]:.0%} '
        f'of the measured FP32 matmul peak, {agents["peak_gflops"]:.0f} GFLOP/s |',
        f'| first graph run (graph optimization, XLA compilation) | {first_run:.1f} s | |',
        f'| resident memory, trainer and workers (sum of each one\'s peak) | '
        f'{agents["peak_memory"]:,.0f} MiB | 1,024 MiB |']
    memory = ', '.join(f'{step // 1000}k: {megabytes:,.0f}' for step, megabytes in agents['memory'])
    lines.append(f'\nMemory (MiB) at each evaluation, by training step: {memory}.')
    lines += [
        '\nTargets:\n',
        '- whole run <= 0.2x SB3\'s time: '
        + (f'{ratio:.2f}x, {"met" if ratio <= 0.2 else "not met"}' if sb3 else 'SB3 not run'),
        f'- update >= 60% of the matmul peak: {achieved / agents["peak_gflops"]:.0%}, '
        f'{"met" if achieved >= 0.6 * agents["peak_gflops"] else "not met"}',
        f'- collection >= 70% of the env-only rate: {collection_rate / env_rate:.0%}, '
        f'{"met" if collection_rate >= 0.7 * env_rate else "not met"}',
        f'- memory <= 1 GiB: '
        f'{agents["peak_memory"]:,.0f} MiB at most, '
        f'{"met" if agents["peak_memory"] <= 1024 else "not met"}']
    return '\n'.join(lines)


def _run_part(part, args, directory):
    """Measure one part in a process of its own (TensorFlow and PyTorch do not share one)."""
    path = os.path.join(directory, f'{part}.json')
    command = [sys.executable, os.path.abspath(__file__), f'--part={part}', f'--result={path}',
               f'--steps={args.steps}', f'--eval_every={args.eval_every}',
               f'--backend={args.backend}']
    subprocess.run(command, check=True)
    with open(path) as file_:
        return json.load(file_)


def _measure_part(args):
    """The measurement of one part, as a `--part` process makes it."""
    if args.part in ('agents', 'collection'):
        from agents.scripts.cli import tensorflow_log
        tensorflow_log.import_quietly()  # As the command line scripts load TensorFlow.
    if args.part == 'agents':
        return measure_agents(args.steps, min(args.eval_every, args.steps), args.backend)
    if args.part == 'collection':
        return measure_agents_collection(min(args.steps, 100_000), args.backend)
    if args.part == 'env':
        return measure_env_only(min(args.steps, 100_000), args.backend)
    from agents.scripts import configs  # The config's keys, without TensorFlow.
    return measure_sb3(args.steps, dict(getattr(configs, CONFIG)(), **zoo_schedule.SCHEDULE))


def main():
    """Run both trainers as the command line asks and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=1_000_000)
    parser.add_argument('--eval_every', type=int, default=100_000)
    parser.add_argument('--backend', default='parallel')
    parser.add_argument('--no-sb3', dest='no_sb3', action='store_true')
    parser.add_argument('--out', default=reporting.results_dir(__file__))
    parser.add_argument(
        '--part', choices=('agents', 'collection', 'env', 'sb3'), help=argparse.SUPPRESS)
    parser.add_argument('--result', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        with open(args.result, 'w') as file_:
            json.dump(_measure_part(args), file_)
        return
    with tempfile.TemporaryDirectory() as directory:
        load = os.getloadavg()
        agents = _run_part('agents', args, directory)
        collection_rate = _run_part('collection', args, directory)
        env_rate = _run_part('env', args, directory)
        sb3 = None if args.no_sb3 else _run_part('sb3', args, directory)
    text = table(args.steps, agents, collection_rate, env_rate, sb3)
    command = reporting.command_text(__file__)
    machine = platform.processor() or platform.machine()
    text += (f'\n\nCommand: `{command}`; one run after the other on {os.cpu_count()} '
             f'cores ({machine}); 1-minute load average {load[0]:.1f} before and '
             f'{os.getloadavg()[0]:.1f} after.\n')
    reporting.write_results(args.out, 'mujoco_throughput', text, dict(
        steps=args.steps, agents=agents, collection_rate=collection_rate, env_rate=env_rate,
        sb3=sb3, schedule=zoo_schedule.SCHEDULE,
        gradient_step_flops=zoo_schedule.gradient_step_flops(
            zoo_schedule.OBSERV_SIZE, zoo_schedule.ACTION_SIZE)))


if __name__ == '__main__':
    main()
