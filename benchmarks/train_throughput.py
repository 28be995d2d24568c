r"""Environment steps per second of the full training loop, against SB3 PPO.

Measures the training phase of BatchPPO on Pendulum-v1 (simulate plus the PPO
updates, run by `tools.Loop` as `train.py` runs it) with each environment
backend, with one step of every environment per `session.run` and with
`steps_per_run` steps (the config's default), and, when stable-baselines3 is
installed (`pip install -e '.[bench]' torch==2.13.0 stable-baselines3`), SB3's
PPO (PyTorch on one thread) on the same task with the same number of
environments and the optimization
of the `pendulum` config: an update after every `rollout_length` steps of
each environment, `update_epochs` epochs in minibatches of `minibatch_size`
samples, networks of `policy_layers` and `value_layers`. The collection rows
run the policy without learning, to show where the time goes. Prints a
markdown table with the ratio of each row to SB3.

    python benchmarks/train_throughput.py [--num_envs 30] [--updates 4] [--steps_per_run 1,16]
"""

import argparse
import time

from agents.tools import load_order

load_order.load_triton_before_tensorflow()  # SB3 trains here, beside TensorFlow.

from lib import training_loop
import numpy as np

from agents.scripts import run_api


def pendulum_config(num_envs):
    """The pendulum config with `num_envs` environments."""
    config = run_api.make_config('pendulum')
    with config.unlocked():
        config.num_agents = num_envs
    return config


def measure_sb3(num_envs, updates):
    """Env steps per second of SB3 PPO with matched settings, or None if missing."""
    try:
        import stable_baselines3
        from stable_baselines3.common import env_util
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)  # Faster on 2 cores than two threads beside the environments.
    config = pendulum_config(num_envs)
    steps_per_update = config.rollout_length * num_envs
    model = stable_baselines3.PPO(
        'MlpPolicy', env_util.make_vec_env('Pendulum-v1', n_envs=num_envs),
        n_steps=config.rollout_length, batch_size=config.minibatch_size,
        n_epochs=config.update_epochs, learning_rate=config.learning_rate,
        gamma=config.discount, gae_lambda=config.gae_lambda, clip_range=config.clip_ratio,
        max_grad_norm=config.max_gradient_norm, device='cpu',
        policy_kwargs=dict(net_arch=dict(
            pi=list(config.policy_layers), vf=list(config.value_layers))), verbose=0)
    model.learn(total_timesteps=steps_per_update)  # Warm-up update.
    samples = updates * steps_per_update
    start = time.perf_counter()
    model.learn(total_timesteps=samples, reset_num_timesteps=False)
    return samples / (time.perf_counter() - start)


def main():
    """Run the benchmark as the command line asks and print its results."""
    default_steps_per_run = pendulum_config(1).steps_per_run
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num_envs', type=int, default=30)
    parser.add_argument('--updates', type=int, default=4)
    parser.add_argument('--backends', default='inprocess,parallel,process')
    parser.add_argument('--steps_per_run', default=f'1,{default_steps_per_run}')
    args = parser.parse_args()
    backends = args.backends.split(',')
    steps_per_run_values = [int(each) for each in args.steps_per_run.split(',')]
    rows = []
    sb3 = measure_sb3(args.num_envs, args.updates)
    for is_training, kind in ((True, 'BatchPPO'), (False, 'BatchPPO collection only')):
        for backend in backends:
            for steps_per_run in steps_per_run_values:
                rows.append((kind, backend, steps_per_run, training_loop.measure_batchppo(
                    pendulum_config(args.num_envs), args.updates, backend, steps_per_run,
                    is_training)))
    if sb3 is not None:
        rows.append(('stable-baselines3 PPO (DummyVecEnv)', '', '', sb3))
    config = pendulum_config(args.num_envs)
    print(f'\nPendulum-v1, {args.num_envs} envs, the pendulum config ('
          f'{"-".join(map(str, config.policy_layers))} networks), training phase '
          f'({args.updates} updates of {config.rollout_length * args.num_envs} steps)\n')
    print('| trainer | backend | steps per run | env steps/s | ratio to SB3 |')
    print('|---|---|---:|---:|---:|')
    for name, backend, steps_per_run, rate in rows:
        ratio = f'{rate / sb3:.2f}x' if sb3 else 'n/a'
        print(f'| {name} | {backend} | {steps_per_run} | {rate:,.0f} | {ratio} |')
    if sb3 is None:
        print('\nstable-baselines3 is not installed: pip install torch==2.13.0 stable-baselines3')
    print(f'\nCommand: python benchmarks/train_throughput.py --num_envs {args.num_envs} '
          f'--updates {args.updates} --backends {args.backends} '
          f'--steps_per_run {args.steps_per_run}')
    return np.array([rate for *_, rate in rows])


if __name__ == '__main__':
    main()
