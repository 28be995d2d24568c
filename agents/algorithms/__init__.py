"""Algorithms that act and learn in batched environments; `PPO` is BatchPPO."""

from agents.algorithms.ppo import PPO
