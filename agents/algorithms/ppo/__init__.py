"""BatchPPO: the PPO graph (`PPO`), its config schema, losses and returns."""

from agents.algorithms.ppo.ppo import PPO
