"""A CleanRL-style PPO loop in PyTorch, on `agents.tools.VectorEnv`.

One file, written for reading: an actor-critic MLP, rollouts from a Gymnasium
vector environment, GAE, and clipped-objective updates on minibatches. The
vector environment is this project's `VectorEnv` (on the `parallel` backend by
default) with SAME_STEP autoreset, so an episode cut by a time limit
bootstraps from the value of its last observation (`info['final_obs']`).
`--vector=sync` runs the same loop on Gymnasium's `SyncVectorEnv`: with the
same seed both give the same numbers, since `VectorEnv` returns exactly what
`SyncVectorEnv` returns.

Usage:
  python benchmarks/torch_ppo.py [--env CartPole-v1] [--steps 100000]
      [--vector ours|sync] [--backend parallel] [--num_envs 8] [--seed 0]
      [--out benchmarks/results/torch_ppo/torch_ppo_cartpole.json]
"""

import argparse
import functools
import json
import os
import sys
import time

import gymnasium
from gymnasium.vector import AutoresetMode
import numpy as np
import torch
from torch import nn

from agents import tools


def make_env(env_id, gamma):
    """One environment with episode statistics; continuous tasks get CleanRL's normalisation."""
    env = gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make(env_id))
    if isinstance(env.action_space, gymnasium.spaces.Box):
        env = gymnasium.wrappers.ClipAction(env)
        env = gymnasium.wrappers.NormalizeObservation(env)
        env = gymnasium.wrappers.TransformObservation(
            env, lambda observ: np.clip(observ, -10, 10), env.observation_space)
        env = gymnasium.wrappers.NormalizeReward(env, gamma=gamma)
        env = gymnasium.wrappers.TransformReward(env, lambda reward: np.clip(reward, -10, 10))
    return env


class Agent(nn.Module):
    """Separate policy and value MLPs; categorical or diagonal Gaussian policy."""

    def __init__(self, observation_space, action_space):
        super().__init__()
        inputs = int(np.prod(observation_space.shape))
        self.discrete = isinstance(action_space, gymnasium.spaces.Discrete)
        outputs = action_space.n if self.discrete else int(np.prod(action_space.shape))
        self.critic = self._mlp(inputs, 1, 1.0)
        self.actor = self._mlp(inputs, outputs, 0.01)
        if not self.discrete:
            self.log_std = nn.Parameter(torch.zeros(outputs))

    @staticmethod
    def _mlp(inputs, outputs, last_gain):
        layers = [nn.Linear(inputs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                  nn.Linear(64, outputs)]
        for layer, gain in zip(layers[::2], (np.sqrt(2), np.sqrt(2), last_gain)):
            nn.init.orthogonal_(layer.weight, gain)
            nn.init.zeros_(layer.bias)
        return nn.Sequential(*layers)

    def value(self, observ):
        return self.critic(observ).squeeze(-1)

    def policy(self, observ):
        if self.discrete:
            return torch.distributions.Categorical(logits=self.actor(observ))
        mean = self.actor(observ)
        return torch.distributions.Normal(mean, self.log_std.exp().expand_as(mean))

    def log_prob_and_entropy(self, observ, action):
        policy = self.policy(observ)
        if self.discrete:
            return policy.log_prob(action), policy.entropy()
        return policy.log_prob(action).sum(-1), policy.entropy().sum(-1)


def finished_episodes(info):
    """Returns of the episodes that ended in a SAME_STEP step, from RecordEpisodeStatistics."""
    final = info.get('final_info', {})
    if 'episode' not in final:
        return []
    return final['episode']['r'][final['_episode']].tolist()


def train(args):
    """Run PPO; return its curve: (env-steps, mean return of episodes since the last point)."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    env_fns = [functools.partial(make_env, args.env, args.gamma)] * args.num_envs
    if args.vector == 'sync':
        envs = gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=AutoresetMode.SAME_STEP)
    else:
        envs = tools.VectorEnv(
            env_fns, backend=args.backend, autoreset_mode=AutoresetMode.SAME_STEP)
    agent = Agent(envs.single_observation_space, envs.single_action_space)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    size, length = args.num_envs, args.rollout
    observs = torch.zeros((length, size) + envs.single_observation_space.shape)
    actions = torch.zeros((length, size) + envs.single_action_space.shape)
    log_probs, rewards, dones, values = (torch.zeros(length, size) for _ in range(4))
    observ = torch.as_tensor(envs.reset(seed=args.seed)[0], dtype=torch.float32)
    curve, returns, steps, start = [], [], 0, time.perf_counter()
    for update in range(args.steps // (size * length)):
        optimizer.param_groups[0]['lr'] = args.lr * (1 - update * size * length / args.steps)
        for t in range(length):
            with torch.no_grad():
                action = agent.policy(observ).sample()
                log_probs[t], values[t] = agent.log_prob_and_entropy(observ, action)[0], (
                    agent.value(observ))
            next_observ, reward, terminated, truncated, info = envs.step(action.numpy())
            reward = torch.as_tensor(reward, dtype=torch.float32)
            for index in np.flatnonzero(truncated & ~terminated):  # Cut by a time limit.
                final = torch.as_tensor(info['final_obs'][index], dtype=torch.float32)
                with torch.no_grad():
                    reward[index] += args.gamma * agent.value(final)
            observs[t], actions[t], rewards[t] = observ, action, reward
            dones[t] = torch.as_tensor(terminated | truncated, dtype=torch.float32)
            observ = torch.as_tensor(next_observ, dtype=torch.float32)
            returns += finished_episodes(info)
        steps += size * length
        with torch.no_grad():
            next_value, advantage = agent.value(observ), torch.zeros(size)
            advantages = torch.zeros(length, size)
            for t in reversed(range(length)):
                following = next_value if t == length - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * following * (1 - dones[t]) - values[t]
                advantage = delta + args.gamma * args.lam * (1 - dones[t]) * advantage
                advantages[t] = advantage
            targets = advantages + values
        batch = [tensor.reshape((size * length,) + tensor.shape[2:]) for tensor in (
            observs, actions, log_probs, advantages, targets)]
        for _ in range(args.epochs):
            for rows in torch.randperm(size * length).chunk(args.minibatches):
                observ_b, action_b, old_log_prob, advantage_b, target_b = (
                    tensor[rows] for tensor in batch)
                log_prob, entropy = agent.log_prob_and_entropy(observ_b, action_b)
                ratio = (log_prob - old_log_prob).exp()
                advantage_b = (advantage_b - advantage_b.mean()) / (advantage_b.std() + 1e-8)
                policy_loss = -torch.min(
                    ratio * advantage_b, ratio.clamp(1 - args.clip, 1 + args.clip) * advantage_b)
                value_loss = 0.5 * (agent.value(observ_b) - target_b) ** 2
                loss = (policy_loss.mean() + args.vf_coef * value_loss.mean()
                        - args.ent_coef * entropy.mean())
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
        if returns:
            curve.append((steps, float(np.mean(returns))))
            print(f'{steps:>8} steps  return {curve[-1][1]:9.2f}  '
                  f'{steps / (time.perf_counter() - start):6.0f} steps/s', flush=True)
            returns = []
    envs.close()
    return curve, time.perf_counter() - start


def main():
    """Run the benchmark as the command line asks and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--env', default='CartPole-v1')
    parser.add_argument('--steps', type=int, default=100_000)
    parser.add_argument('--vector', choices=('ours', 'sync'), default='ours')
    parser.add_argument('--backend', default='parallel')
    parser.add_argument('--num_envs', type=int, default=8)
    parser.add_argument('--rollout', type=int, default=128)
    parser.add_argument('--epochs', type=int, default=4)
    parser.add_argument('--minibatches', type=int, default=4)
    parser.add_argument('--lr', type=float, default=2.5e-4)
    parser.add_argument('--gamma', type=float, default=0.99)
    parser.add_argument('--lam', type=float, default=0.95)
    parser.add_argument('--clip', type=float, default=0.2)
    parser.add_argument('--ent_coef', type=float, default=0.01)
    parser.add_argument('--vf_coef', type=float, default=0.5)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--out', help='JSON file for the curve and wall time')
    args = parser.parse_args()
    curve, seconds = train(args)
    print(f'{args.env}: {curve[-1][0]} steps in {seconds:.0f} s, last return {curve[-1][1]:.2f}')
    if args.out:
        with open(args.out, 'w') as file:
            json.dump({'command': sys.argv, 'args': vars(args), 'seconds': seconds,
                       'curve': curve, 'load_average': os.getloadavg()}, file, indent=2)


if __name__ == '__main__':
    main()
