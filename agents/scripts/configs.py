"""Example configurations: the hyperparameters of BatchPPO for each task.

Each configuration is a function returning a dict; `train.py` selects one with
`--config=NAME`. Tasks start from `default()` and override what they need,
with the values of the original BatchPPO on today's Gymnasium task ids.
"""

import tensorflow as tf

from agents.algorithms.ppo import ppo
from agents.scripts import networks


def default():
    """Default configuration for PPO."""
    # General
    algorithm = ppo.PPO
    num_agents = 30
    # Evaluate the policy's mode over this many complete episodes every
    # `eval_every` training steps and at the end of training.
    eval_episodes = 10
    eval_every = 10000
    seed = 0
    # Environment
    normalize_ranges = True
    # Network
    network = networks.feed_forward_gaussian
    weight_summaries = dict(all=r'.*', policy=r'.*/policy/.*', value=r'.*/value/.*')
    policy_layers = 200, 100
    value_layers = 200, 100
    activation = 'tanh'
    init_output_factor = 0.1
    init_std = 0.35
    # Pass the mean of Gaussian policies through a tanh, inside the action range.
    bounded_mean = True
    # Bounds the environment clips actions to, for the probabilities of clipped
    # actions in the policy loss; None uses the density of the sampled action.
    action_bounds = None
    # Collection: train after every `update_every` whole episodes, or, with a
    # rollout length, after every `rollout_length` steps of each environment.
    update_every = 30
    rollout_length = None
    # Optimization
    update_epochs = 25
    optimizer = tf.compat.v1.train.AdamOptimizer
    learning_rate = 1e-4
    learning_rate_schedule = 'constant'
    max_gradient_norm = None
    # Feed-forward networks train on minibatches of this many steps (all steps
    # at once if None); recurrent ones on `batch_size` chunks of `chunk_length`.
    minibatch_size = None
    batch_size = None
    chunk_length = None
    # Losses
    objective = 'kl_penalty'
    discount = 0.995
    gae_lambda = None
    reward_normalization = 'reward'
    kl_target = 1e-2
    kl_cutoff_factor = 2
    kl_cutoff_coef = 1000
    kl_init_penalty = 1
    kl_penalty_bounds = (1e-3, 1e3)
    clip_ratio = 0.2
    value_clip = None
    value_coef = 1.0
    entropy_coef = 0.0
    return locals()


def pendulum():
    """Configuration for the pendulum swing-up task.

    Pendulum needs a short horizon with generalized advantages, many small
    update steps, an unbounded policy mean, and probabilities of the actions as
    clipped by the environment (the best torques lie at the bounds); with the
    original hyperparameters the policy gets stuck spinning the pendulum.
    """
    config = default()
    config.update(
        env='Pendulum-v1', max_length=200, steps=1e6, discount=0.95, gae_lambda=0.95,
        learning_rate=3e-4, update_epochs=10, batch_size=5, chunk_length=50,
        bounded_mean=False, action_bounds=(-1.0, 1.0))
    return config


def cartpole():
    """Configuration for the cart-pole balancing task, with discrete actions."""
    config = default()
    config.update(
        env='CartPole-v1', max_length=500, steps=2e5,
        network=networks.feed_forward_categorical, normalize_ranges=False)
    return config


def reacher():
    """Configuration for MuJoCo's reacher task."""
    config = default()
    config.update(env='Reacher-v5', max_length=1000, steps=5e6, discount=0.985, update_every=60)
    return config


def cheetah():
    """Configuration for MuJoCo's half cheetah task."""
    config = default()
    config.update(env='HalfCheetah-v5', max_length=1000, steps=1e7, discount=0.99)
    return config


def walker():
    """Configuration for MuJoCo's two-legged walker task."""
    config = default()
    config.update(env='Walker2d-v5', max_length=1000, steps=1e7)
    return config


def hopper():
    """Configuration for MuJoCo's one-legged hopper task."""
    config = default()
    config.update(env='Hopper-v5', max_length=1000, steps=1e7, update_every=60)
    return config


def ant():
    """Configuration for MuJoCo's four-legged ant task."""
    config = default()
    config.update(env='Ant-v5', max_length=1000, steps=2e7)
    return config


def humanoid():
    """Configuration for MuJoCo's humanoid task."""
    config = default()
    config.update(env='Humanoid-v5', max_length=1000, steps=5e7, update_every=60)
    return config
