"""Efficient batched reinforcement learning in TensorFlow, with BatchPPO."""
