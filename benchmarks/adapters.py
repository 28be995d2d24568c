"""The batch environments behind Gymnasium's and SB3's interfaces: equal results, speed.

Three parts (`--parts`, all by default):

- `curve`: SB3 PPO on CartPole-v1 with 8 environments, the same seed and
  hyperparameters, on `SB3VecEnv` (parallel backend), SB3's `DummyVecEnv` and
  `SubprocVecEnv`: the learning curves (mean return of the episodes finished
  in each rollout) and the final policy weights must be identical, and the
  wall-clock times are compared.
- `cheetah`: SB3 PPO end-to-end steps/s on HalfCheetah-v5 with 8 environments
  (default PPO hyperparameters but 512 steps per rollout) on `DummyVecEnv`,
  `SubprocVecEnv` and `SB3VecEnv`.
- `overhead`: raw env-steps/s of `VectorEnv` (and `SB3VecEnv`) against the
  same backend stepped directly (stepping and resetting ended episodes), with
  Gymnasium's `SyncVectorEnv` for reference; the adapters should lose at most 10%.

Usage:
  python benchmarks/adapters.py [--parts curve,cheetah,overhead] [--quick]
      [--curve_steps 50000] [--cheetah_steps 50000] [--outdir benchmarks/results/adapters]

Writes adapters.json and adapters.md to benchmarks/results/adapters/ (or
--outdir); the parts run replace theirs in those files and the others' results
stay, each part with its command, date and load. PyTorch runs on one thread in
every run, so environment workers get the other core.
"""

import argparse
import functools
import json
import os
import sys
import time

import gymnasium
from lib import reporting
import numpy as np

from agents import tools
from agents.tools import envs
from agents.tools import load_order

load_order.load_triton_before_tensorflow()  # Before SB3 loads TensorFlow.

NUM_ENVS = 8
SEED = 0
# PPO on CartPole-v1 after rl-baselines3-zoo's tuned settings.
CARTPOLE_PPO = dict(
    n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
    learning_rate=1e-3, clip_range=0.2)
CHEETAH_PPO = dict(n_steps=512)


def make_env(env_id):
    """The environment with episode statistics, which SB3 logs from the infos."""
    return gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make(env_id))


def sb3_vec_env(kind, env_id):
    """An SB3 vector environment of NUM_ENVS copies of `env_id`."""
    from stable_baselines3.common import vec_env  # pylint: disable=import-outside-toplevel
    env_fns = [functools.partial(make_env, env_id)] * NUM_ENVS
    if kind == 'DummyVecEnv':
        return vec_env.DummyVecEnv(env_fns)
    if kind == 'SubprocVecEnv':
        return vec_env.SubprocVecEnv(env_fns)
    return tools.SB3VecEnv(env_fns, backend='parallel')


def train_ppo(kind, env_id, steps, hyperparameters):
    """Train SB3 PPO on a vector environment of the kind.

    Returns:
      Dict with the wall-clock seconds of `learn`, the env-steps trained, the
      curve (env-steps and mean return of the episodes finished in each
      rollout) and a digest of the final policy weights.
    """
    import stable_baselines3  # pylint: disable=import-outside-toplevel
    from stable_baselines3.common import callbacks  # pylint: disable=import-outside-toplevel
    import torch  # pylint: disable=import-outside-toplevel

    class Curve(callbacks.BaseCallback):
        """Mean return of the episodes that ended in each rollout."""

        def __init__(self):
            super().__init__()
            self.points, self._returns = [], []

        def _on_step(self):
            self._returns += [
                float(info['episode']['r']) for info in self.locals['infos'] if 'episode' in info]
            return True

        def _on_rollout_end(self):
            if self._returns:
                self.points.append((self.num_timesteps, float(np.mean(self._returns))))
            self._returns = []

    torch.set_num_threads(1)
    env = sb3_vec_env(kind, env_id)
    try:
        model = stable_baselines3.PPO(
            'MlpPolicy', env, seed=SEED, device='cpu', verbose=0, **hyperparameters)
        curve = Curve()
        start = time.perf_counter()
        model.learn(steps, callback=curve)
        seconds = time.perf_counter() - start
        weights = np.concatenate([
            parameter.detach().numpy().ravel() for parameter in model.policy.parameters()])
    finally:
        env.close()
    return {
        'seconds': seconds, 'steps': int(model.num_timesteps),
        'steps_per_second': model.num_timesteps / seconds, 'curve': curve.points,
        'weights_digest': weights.tobytes().hex()[-16:] + f' (sum {weights.sum():.9g})'}


def curve_part(steps):
    """SB3 PPO on CartPole: same curve on SB3VecEnv as on DummyVecEnv, timed against both."""
    runs = {kind: train_ppo(kind, 'CartPole-v1', steps, CARTPOLE_PPO)
            for kind in ('DummyVecEnv', 'SB3VecEnv', 'SubprocVecEnv')}
    reference = runs['DummyVecEnv']
    lines = [
        f'### SB3 PPO on CartPole-v1, {NUM_ENVS} envs, seed {SEED}, {steps} steps',
        '', '| vector env | learn() seconds | steps/s | curve and weights as DummyVecEnv |',
        '|---|---|---|---|']
    for kind, run in runs.items():
        same = run['curve'] == reference['curve'] and (
            run['weights_digest'] == reference['weights_digest'])
        lines.append(
            f'| {kind} | {run["seconds"]:.1f} | {run["steps_per_second"]:.0f} | '
            f'{"identical" if same else "DIFFERENT"} |')
    lines += ['', 'Mean return of the episodes finished in each rollout (every 10th rollout):',
              '', '| env-steps | ' + ' | '.join(runs) + ' |', '|---' * (len(runs) + 1) + '|']
    for index in range(0, len(reference['curve']), 10):
        cells = [f'{run["curve"][index][1]:.2f}' if index < len(run['curve']) else '-'
                 for run in runs.values()]
        lines.append(f'| {reference["curve"][index][0]} | ' + ' | '.join(cells) + ' |')
    return runs, lines


def cheetah_part(steps):
    """SB3 PPO end-to-end steps/s on HalfCheetah-v5 with 8 environments."""
    runs = {kind: train_ppo(kind, 'HalfCheetah-v5', steps, CHEETAH_PPO)
            for kind in ('DummyVecEnv', 'SubprocVecEnv', 'SB3VecEnv')}
    lines = [
        f'### SB3 PPO on HalfCheetah-v5, {NUM_ENVS} envs, {steps} steps '
        f'(n_steps={CHEETAH_PPO["n_steps"]}, other hyperparameters SB3 defaults)', '',
        '| vector env | learn() seconds | env-steps/s | vs SubprocVecEnv | vs DummyVecEnv |',
        '|---|---|---|---|---|']
    for kind, run in runs.items():
        lines.append(
            f'| {kind} | {run["seconds"]:.1f} | {run["steps_per_second"]:.0f} | '
            f'{run["steps_per_second"] / runs["SubprocVecEnv"]["steps_per_second"]:.2f}x | '
            f'{run["steps_per_second"] / runs["DummyVecEnv"]["steps_per_second"]:.2f}x |')
    return runs, lines


class Direct:
    """A backend stepped directly: step, then reset the environments that ended."""

    def __init__(self, backend, env_id):
        env_fns = [functools.partial(gymnasium.make, env_id)] * NUM_ENVS
        self.env = envs.make_batch_env(backend, env_fns)
        self.env.reset(seeds=range(NUM_ENVS))

    def step(self, actions):
        _, _, terminated, truncated, _ = self.env.step(actions)
        ended = np.flatnonzero(terminated | truncated)
        if len(ended):
            self.env.reset(ended)


class Adapter:
    """An adapter (VectorEnv, SB3VecEnv) or Gymnasium's SyncVectorEnv, stepped as is."""

    def __init__(self, env):
        self.env = env
        if isinstance(env, gymnasium.vector.VectorEnv):
            env.reset(seed=0)
        else:
            env.reset()

    def step(self, actions):
        self.env.step(actions)


def stepping_rate(stepper, actions, duration):
    """Env-steps per second of `stepper` over about `duration` seconds."""
    batch_steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < duration:
        stepper.step(actions[batch_steps % len(actions)])
        batch_steps += 1
    return batch_steps * NUM_ENVS / (time.perf_counter() - start)


def overhead_part(env_ids, backends, duration, repeats):
    """Env-steps/s through the adapters and of the same backends directly."""
    results, lines = {}, []
    for env_id in env_ids:
        space = gymnasium.make(env_id).action_space
        space.seed(SEED)
        actions = np.stack([np.stack([space.sample() for _ in range(NUM_ENVS)])
                            for _ in range(64)])
        env_fns = [functools.partial(gymnasium.make, env_id)] * NUM_ENVS
        built = {'gymnasium SyncVectorEnv': Adapter(gymnasium.vector.SyncVectorEnv(env_fns))}
        for backend in backends:
            built[f'{backend} directly'] = Direct(backend, env_id)
            built[f'{backend} VectorEnv'] = Adapter(tools.VectorEnv(env_fns, backend=backend))
            built[f'{backend} SB3VecEnv'] = Adapter(tools.SB3VecEnv(env_fns, backend=backend))
        best = dict.fromkeys(built, 0.0)
        try:
            for stepper in built.values():
                stepping_rate(stepper, actions, 0.2)  # Warm up.
            for _ in range(repeats):  # In turns, so load changes hit every stepper alike.
                for name, stepper in built.items():
                    best[name] = max(best[name], stepping_rate(stepper, actions, duration))
        finally:
            for stepper in built.values():
                stepper.env.close()
        results[env_id] = best
        lines += [f'### {env_id}, {NUM_ENVS} envs: env-steps/s (best of {repeats} turns of '
                  f'{duration} s)', '', '| backend | directly | VectorEnv | SB3VecEnv | '
                  'VectorEnv / directly | SB3VecEnv / directly |', '|---|---|---|---|---|---|']
        for backend in backends:
            direct = best[f'{backend} directly']
            gym_adapter, sb3_adapter = best[f'{backend} VectorEnv'], best[f'{backend} SB3VecEnv']
            lines.append(
                f'| {backend} | {direct / 1000:.1f}k | {gym_adapter / 1000:.1f}k | '
                f'{sb3_adapter / 1000:.1f}k | {gym_adapter / direct:.2f} | '
                f'{sb3_adapter / direct:.2f} |')
        lines += ['', f'gymnasium SyncVectorEnv: {best["gymnasium SyncVectorEnv"] / 1000:.1f}k '
                  'env-steps/s.', '']
    return results, lines


def main():
    """Run the benchmark as the command line asks and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--parts', default='curve,cheetah,overhead')
    parser.add_argument('--quick', action='store_true', help='short runs for a fast check')
    parser.add_argument('--curve_steps', type=int, default=50_000)
    parser.add_argument('--cheetah_steps', type=int, default=50_000)
    parser.add_argument('--envs', default='CartPole-v1,Pendulum-v1,HalfCheetah-v5')
    parser.add_argument('--backends', default='parallel,inprocess,process')
    parser.add_argument('--outdir', default=reporting.results_dir(__file__))
    args = parser.parse_args()
    parts = args.parts.split(',')
    if not set(parts) <= {'curve', 'cheetah', 'overhead'}:
        parser.error(f'--parts takes curve, cheetah and overhead, got {args.parts}.')
    curve_steps = 2048 if args.quick else args.curve_steps
    cheetah_steps = 4096 if args.quick else args.cheetah_steps
    duration, repeats = (0.3, 2) if args.quick else (1.0, 5)
    runs = {
        'curve': lambda: curve_part(curve_steps),
        'cheetah': lambda: cheetah_part(cheetah_steps),
        'overhead': lambda: overhead_part(
            args.envs.split(','), args.backends.split(','), duration, repeats)}
    os.makedirs(args.outdir, exist_ok=True)
    name = 'adapters_quick' if args.quick else 'adapters'
    json_path = os.path.join(args.outdir, f'{name}.json')
    saved = {}
    if os.path.exists(json_path):
        with open(json_path) as file:
            saved = json.load(file)['parts']
    for part in parts:
        load_before = os.getloadavg()
        results, lines = runs[part]()
        load_after = os.getloadavg()
        header = [
            f'Command: {reporting.command_text(__file__)}',
            f'{os.cpu_count()} cores shared with other work: load average '
            f'{load_before[0]:.1f} before, {load_after[0]:.1f} after (other agents\' runs '
            f'and tests shared the cores), so absolute speeds are low and noisy; runs '
            f'compared in one table ran back to back.', '']
        print('\n'.join(header + lines))
        saved[part] = {
            **reporting.run_record(load_before, load_after),
            'results': results, 'report': header + lines}
    with open(json_path, 'w') as file:
        json.dump({'parts': saved}, file, indent=2)
    with open(os.path.join(args.outdir, f'{name}.md'), 'w') as file:
        file.write('\n'.join(
            line for part in runs if part in saved
            for line in saved[part]['report'] + ['']).rstrip('\n') + '\n')
    print(f'Wrote {name}.json and {name}.md to {args.outdir}', file=sys.stderr)


if __name__ == '__main__':
    main()
