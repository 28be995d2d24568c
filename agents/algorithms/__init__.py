"""Algorithms that act and learn in batched environments; PPO is in `ppo`."""
