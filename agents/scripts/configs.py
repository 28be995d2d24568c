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

    Short rollouts with generalized advantages and many small update steps,
    an unbounded policy mean, and probabilities of the actions as clipped by
    the environment (the best torques lie at the bounds).
    """
    config = default()
    config.update(
        env='Pendulum-v1', max_length=200, steps=1e5, num_agents=8, rollout_length=128,
        eval_every=5000, policy_layers=(64, 64), value_layers=(64, 64), init_std=1.0,
        discount=0.9, gae_lambda=0.95, objective='clip', learning_rate=1e-3,
        update_epochs=10, minibatch_size=64, max_gradient_norm=0.5,
        reward_normalization='return', bounded_mean=False, action_bounds=(-1.0, 1.0))
    return config


def cartpole():
    """Configuration for the cart-pole balancing task, with discrete actions."""
    config = default()
    config.update(
        env='CartPole-v1', max_length=500, steps=2e5,
        network=networks.feed_forward_categorical, normalize_ranges=False)
    return config


def _mujoco(env, **overrides):
    """Shared settings of the MuJoCo tasks, after rl-baselines3-zoo's tuned PPO.

    Each environment collects short rollouts, so the policy updates every 512
    steps; ReLU networks of 256 units start with a small exploration noise.
    """
    config = default()
    config.update(
        env=env, max_length=1000, steps=1e6, num_agents=8, rollout_length=64,
        eval_every=50000, policy_layers=(256, 256), value_layers=(256, 256),
        activation='relu', init_std=0.135, bounded_mean=False, objective='clip',
        reward_normalization='return', minibatch_size=64, update_epochs=10,
        discount=0.99, gae_lambda=0.95, learning_rate=3e-4, max_gradient_norm=0.5)
    config.update(overrides)
    return config


def reacher():
    """Configuration for MuJoCo's reacher task."""
    return _mujoco(
        'Reacher-v5', max_length=50, discount=0.9, gae_lambda=1.0, learning_rate=1e-4,
        clip_ratio=0.3, update_epochs=5, minibatch_size=32, max_gradient_norm=0.9,
        value_coef=1.9)


def cheetah():
    """Configuration for MuJoCo's half cheetah task."""
    return _mujoco(
        'HalfCheetah-v5', discount=0.98, gae_lambda=0.92, learning_rate=2.06e-5,
        entropy_coef=4e-4, clip_ratio=0.1, update_epochs=20, max_gradient_norm=0.8,
        value_coef=1.16)


def walker():
    """Configuration for MuJoCo's two-legged walker task."""
    return _mujoco(
        'Walker2d-v5', policy_layers=(64, 64), value_layers=(64, 64), activation='tanh',
        init_std=1.0, learning_rate=5.05e-5, entropy_coef=5.85e-4, clip_ratio=0.1,
        update_epochs=20, minibatch_size=32, max_gradient_norm=1.0, value_coef=1.74)


def hopper():
    """Configuration for MuJoCo's one-legged hopper task."""
    return _mujoco(
        'Hopper-v5', discount=0.999, gae_lambda=0.99, learning_rate=9.8e-5,
        entropy_coef=2.3e-3, clip_ratio=0.2, update_epochs=5, minibatch_size=32,
        max_gradient_norm=0.7, value_coef=1.67)


def ant():
    """Configuration for MuJoCo's four-legged ant task."""
    return _mujoco(
        'Ant-v5', policy_layers=(64, 64), value_layers=(64, 64), activation='tanh',
        init_std=1.0, rollout_length=256, learning_rate_schedule='linear')


def humanoid():
    """Configuration for MuJoCo's humanoid task."""
    return _mujoco(
        'Humanoid-v5', discount=0.95, gae_lambda=0.9, learning_rate=3.57e-5,
        entropy_coef=2.4e-3, clip_ratio=0.3, update_epochs=5, minibatch_size=256,
        max_gradient_norm=2.0, value_coef=0.86)
