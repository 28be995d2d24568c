"""Example configurations: the hyperparameters of BatchPPO for each task.

Each configuration is a function returning a dict of the keys it sets;
`train.py` selects one with `--config=NAME`. Every key, its type, default,
range and meaning is declared once, in the schema
(`agents.scripts.config_schema.RunConfig`, `agents.algorithms.ppo.config.PPOConfig`,
`agents.scripts.networks.NetworkConfig`), whose defaults are those of the
original BatchPPO. Tasks start from `default()` and override what they need,
on today's Gymnasium task ids. Callables are named by their registered names
(see `agents.scripts.registry`).
"""


def default():
    """Keys every task shares beyond the schema's defaults."""
    return dict(algorithm='ppo')


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
        network='feed_forward_categorical', normalize_ranges=False)
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
