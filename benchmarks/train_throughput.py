r"""Environment steps per second of the full training loop, against SB3 PPO.

Measures the training phase of BatchPPO on Pendulum-v1 (simulate plus the PPO
updates) with each environment backend, and, when stable-baselines3 is
installed (`pip install -e '.[bench]' torch==2.13.0 stable-baselines3`), SB3's
PPO on the same task with the same number of environments, the same 200-100
policy and value networks, and the same optimization per sample as the
`pendulum` config: an update every 200 steps per environment, with
`update_epochs` epochs in minibatches of `batch_size * chunk_length` samples.
The collection rows run the policy without learning, to show where the time
goes. Prints a markdown table with the ratio of each row to SB3.

    python benchmarks/train_throughput.py [--num_envs 30] [--updates 4]
"""

import argparse
import time

import numpy as np
import tensorflow as tf

from agents.scripts import environments
from agents.scripts import utility


def pendulum_config(num_envs):
    """The pendulum config with `num_envs` environments and one update per episode."""
    config = utility.make_config('pendulum')
    with config.unlocked():
        config.num_agents = num_envs
        config.update_every = num_envs
    return config


def measure_batchppo(num_envs, updates, backend, is_training=True):
    """Env steps per second of the training phase, after one warm-up update."""
    config = pendulum_config(num_envs)
    with tf.Graph().as_default():
        batch_env = utility.define_batch_env(
            environments.environment_constructors(config, num_envs), backend)
        graph = utility.define_simulation_graph(batch_env, config.algorithm, config)
        feed = {
            graph.is_training: is_training, graph.should_log: False,
            graph.force_reset: False}
        steps_per_update = config.max_length
        try:
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                for _ in range(steps_per_update):
                    sess.run(graph.done, feed)
                start = time.perf_counter()
                for _ in range(updates * steps_per_update):
                    sess.run(graph.done, feed)
                duration = time.perf_counter() - start
        finally:
            batch_env.close()
    return updates * steps_per_update * num_envs / duration


def measure_sb3(num_envs, updates):
    """Env steps per second of SB3 PPO with matched settings, or None if missing."""
    try:
        import stable_baselines3
        from stable_baselines3.common import env_util
    except ImportError:
        return None
    config = pendulum_config(num_envs)
    steps_per_update = config.max_length
    model = stable_baselines3.PPO(
        'MlpPolicy', env_util.make_vec_env('Pendulum-v1', n_envs=num_envs),
        n_steps=steps_per_update, batch_size=config.batch_size * config.chunk_length,
        n_epochs=config.update_epochs, device='cpu',
        policy_kwargs=dict(net_arch=dict(pi=[200, 100], vf=[200, 100])), verbose=0)
    model.learn(total_timesteps=steps_per_update * num_envs)  # Warm-up update.
    samples = updates * steps_per_update * num_envs
    start = time.perf_counter()
    model.learn(total_timesteps=samples, reset_num_timesteps=False)
    return samples / (time.perf_counter() - start)


def main():
    """Run the benchmark as the command line asks and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num_envs', type=int, default=30)
    parser.add_argument('--updates', type=int, default=4)
    parser.add_argument('--backends', default='inprocess,parallel,process')
    args = parser.parse_args()
    rows = []
    sb3 = measure_sb3(args.num_envs, args.updates)
    for backend in args.backends.split(','):
        rows.append((f'BatchPPO, {backend} backend', measure_batchppo(
            args.num_envs, args.updates, backend)))
    for backend in args.backends.split(','):
        rows.append((f'BatchPPO collection only (no updates), {backend} backend',
                     measure_batchppo(args.num_envs, args.updates, backend, False)))
    if sb3 is not None:
        rows.append(('stable-baselines3 PPO (DummyVecEnv)', sb3))
    print(f'\nPendulum-v1, {args.num_envs} envs, 200-100 networks, training phase '
          f'({args.updates} updates of {200 * args.num_envs} steps)\n')
    print('| trainer | env steps/s | ratio to SB3 |')
    print('|---|---:|---:|')
    for name, rate in rows:
        ratio = f'{rate / sb3:.2f}x' if sb3 else 'n/a'
        print(f'| {name} | {rate:,.0f} | {ratio} |')
    if sb3 is None:
        print('\nstable-baselines3 is not installed: pip install torch==2.13.0 stable-baselines3')
    print(f'\nCommand: python benchmarks/train_throughput.py --num_envs {args.num_envs} '
          f'--updates {args.updates} --backends {args.backends}')
    return np.array([rate for _, rate in rows])


if __name__ == '__main__':
    main()
