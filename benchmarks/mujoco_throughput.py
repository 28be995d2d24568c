r"""Wall time of a whole HalfCheetah-v5 training run, against SB3 PPO doing the same work.

Trains the shipped `cheetah` config (8 environments, rollouts of 64 steps,
256-256 ReLU networks, minibatches of 64 and 20 epochs: 160 gradient steps
per 512 environment steps) and Stable-Baselines3 PPO set up to do exactly the
same work: 8 environments in a `DummyVecEnv` (SB3's default) with
`VecNormalize`, `n_steps=64`, `batch_size=64`, `n_epochs=20`, the same
networks, initial standard deviation and optimizer settings, PyTorch on one
thread (faster on 2 cores than two threads beside the environments). Both make the
same number of environment steps and gradient steps; only training time
counts (our periodic evaluations are timed apart).

For SB3, a callback splits the time into collection and update. For ours,
the update runs inside the same TensorFlow `session.run` as collection, so
the collection rate is measured apart, running the policy without learning.
Our resident memory (trainer and workers) is sampled at every evaluation,
every `--eval_every` steps.

    python benchmarks/mujoco_throughput.py                 # 1M steps each: about an hour
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

import learning
import reporting

CONFIG = 'cheetah'
ENV = 'HalfCheetah-v5'


def _cheetah_config(steps, eval_every):
    from agents.scripts import utility
    config = utility.make_config(CONFIG)
    with config.unlocked():
        config.update(steps=steps, eval_every=eval_every, eval_episodes=1, seed=0)
    return config


def measure_agents(steps, eval_every, backend):
    """Train our cheetah config for `steps`; return training seconds and memory samples."""
    from absl import logging

    from agents.scripts import train
    logging.set_verbosity(logging.WARNING)
    config = _cheetah_config(steps, eval_every)
    seconds, memory = 0.0, []
    with tempfile.TemporaryDirectory() as logdir:
        for result in train.train(config, logdir, backend):
            if result.phase == 'train':
                seconds += result.seconds
            else:
                memory.append((result.step, learning.resident_megabytes()))
                print(f'agents: step {result.step:,}, {seconds / 60:.1f} min training, '
                      f'{memory[-1][1]:,.0f} MiB', flush=True)
    return dict(seconds=seconds, memory=memory)


def measure_agents_collection(steps, backend):
    """Env steps per second of our policy and environments alone, without learning."""
    import train_throughput  # The benchmark beside this one; it imports TensorFlow.
    config = _cheetah_config(steps, steps)
    updates = max(steps // (config.rollout_length * config.num_agents), 1)
    return train_throughput.measure_batchppo(
        config, updates, backend, config.steps_per_run, is_training=False)


def measure_sb3(steps, config):
    """Train SB3 PPO doing our config's work; return training, collection and update seconds."""
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


def table(steps, agents, collection_rate, sb3):
    """Markdown table of the measurements."""
    def row(name, seconds, update):
        rate = steps / seconds
        ratio = f'{seconds / sb3["seconds"]:.2f}x' if sb3 else 'n/a'
        return (f'| {name} | {rate:,.0f} | {seconds / 60:.1f} min | '
                f'{seconds / 60 * 1e6 / steps:.1f} min | {update} | {ratio} |')
    lines = [
        f'**{ENV}**, {steps:,} training steps, `cheetah` config\'s work '
        '(160 gradient steps of 64 samples per 512 env steps)\n',
        '| trainer | env steps/s | training time | per 1M steps | collection / update | '
        'wall time vs SB3 |', '|---|---:|---:|---:|---|---:|']
    collection = steps / collection_rate
    lines.append(row(
        'agents (parallel backend)', agents['seconds'],
        f'{collection / 60:.1f} / {(agents["seconds"] - collection) / 60:.1f} min'))
    if sb3:
        lines.append(row(
            'SB3 PPO (DummyVecEnv + VecNormalize)', sb3['seconds'],
            f'{sb3["collection"] / 60:.1f} / {sb3["update"] / 60:.1f} min'))
    memory = ', '.join(f'{step // 1000}k: {megabytes:,.0f}' for step, megabytes in agents['memory'])
    lines.append(f'\nOur collection alone: {collection_rate:,.0f} env steps/s (policy without '
                 f'learning), from which our update time is estimated.')
    lines.append(f'\nOur resident memory (MiB, trainer and workers) by training step: {memory}.')
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
    if args.part == 'agents':
        return measure_agents(args.steps, min(args.eval_every, args.steps), args.backend)
    if args.part == 'collection':
        return measure_agents_collection(min(args.steps, 100_000), args.backend)
    from agents.scripts import configs  # The config's keys, without TensorFlow.
    return measure_sb3(args.steps, getattr(configs, CONFIG)())


def main():
    """Run both trainers as the command line asks and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=1_000_000)
    parser.add_argument('--eval_every', type=int, default=100_000)
    parser.add_argument('--backend', default='parallel')
    parser.add_argument('--no-sb3', dest='no_sb3', action='store_true')
    parser.add_argument('--out', default=reporting.results_dir(__file__))
    parser.add_argument('--part', choices=('agents', 'collection', 'sb3'), help=argparse.SUPPRESS)
    parser.add_argument('--result', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        with open(args.result, 'w') as file_:
            json.dump(_measure_part(args), file_)
        return
    with tempfile.TemporaryDirectory() as directory:
        agents = _run_part('agents', args, directory)
        collection_rate = _run_part('collection', args, directory)
        sb3 = None if args.no_sb3 else _run_part('sb3', args, directory)
    text = table(args.steps, agents, collection_rate, sb3)
    command = ' '.join(['python benchmarks/mujoco_throughput.py'] + sys.argv[1:])
    machine = platform.processor() or platform.machine()
    text += (f'\n\nCommand: `{command}`; one run after the other on {os.cpu_count()} '
             f'cores ({machine}).\n')
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'mujoco_throughput.md'), 'w') as file_:
        file_.write(text)
    with open(os.path.join(args.out, 'mujoco_throughput.json'), 'w') as file_:
        json.dump(dict(steps=args.steps, agents=agents, collection_rate=collection_rate,
                       sb3=sb3), file_)


if __name__ == '__main__':
    main()
