"""BatchPPO: the PPO graph, its config schema, losses and returns."""
