"""Example configurations: the hyperparameters of BatchPPO for each task.

Each configuration is a function returning a dict of the keys it sets;
`train.py` selects one with `--config=NAME`. Every key, its type, default,
range and meaning is declared once, in the schema
(`agents.scripts.config_schema.RunConfig`, `agents.algorithms.ppo.config.PPOConfig`,
`agents.parts.networks.NetworkConfig`), whose defaults are those of the
original BatchPPO. Tasks start from `default()` and override what they need,
on today's Gymnasium task ids. Callables are named by their registered names
(see `agents.scripts.registry`).

The shipped tasks collect rollouts and train with the clipped objective, the
settings that reach the learning targets in `benchmarks/learning.py`; the
original's whole-episode collection and KL penalty stay one key away
(`rollout_length=None`, `objective='kl_penalty'`).
"""


def default():
    """Keys every task shares beyond the schema's defaults."""
    return dict(algorithm='ppo')


def pendulum():
    """Configuration for the pendulum swing-up task.

    Short rollouts with generalized advantages and many small update steps,
    an unbounded policy mean, and probabilities of the actions as clipped by
    the environment (the best torques lie at the bounds). Update steps of its
    small networks start sooner inline (see benchmarks/update_step.py).
    """
    config = default()
    config.update(
        env='Pendulum-v1', max_length=200, steps=1e5, num_agents=8, rollout_length=128,
        eval_every=5000, policy_layers=(64, 64), value_layers=(64, 64), init_std=1.0,
        discount=0.9, gae_lambda=0.95, objective='clip', learning_rate=1e-3,
        update_epochs=10, minibatch_size=64, max_gradient_norm=0.5,
        reward_normalization='return', bounded_mean=False, action_bounds=(-1.0, 1.0),
        gradient_graph='inline')
    return config


def cartpole():
    """Configuration for the cart-pole balancing task, with discrete actions.

    Rewards stay unscaled: scaled by the spread of returns, which grows as the
    pole stays up longer, the greedy policy fell back from 500 to about 300.
    Update steps of its small networks run faster inline (see
    benchmarks/update_step.py).
    """
    config = default()
    config.update(
        env='CartPole-v1', max_length=500, steps=1e5, num_agents=8, rollout_length=32,
        eval_every=5000, network='feed_forward_categorical', normalize_ranges=False,
        policy_layers=(64, 64), value_layers=(64, 64), objective='clip', discount=0.98,
        gae_lambda=0.8, learning_rate=1e-3, learning_rate_schedule='linear',
        update_epochs=20, minibatch_size=256, max_gradient_norm=0.5,
        reward_normalization='none', gradient_graph='inline')
    return config


def pendulum_novel():
    """Pendulum without its angular velocity: partially observed, for recurrent policies.

    The observation keeps the angle's cosine and sine; the velocity (index 2)
    is zeroed, as in rl-baselines3-zoo's PendulumNoVel. A GRU policy recovers
    the velocity from the angles it has seen. BatchPPO's KL penalty and a
    learning rate that decays to zero, chosen on tuning seeds 100-102 (the
    clipped objective and a constant rate swung more between evaluations late
    in training; docs/recurrent.md). The whole update runs as one
    XLA-compiled function, which makes the GRU train at the feed-forward
    config's speed.
    """
    config = pendulum()
    config.update(
        observation_mask=(2,), network='recurrent_gaussian', minibatch_size=None,
        chunk_length=32, batch_size=8, objective='kl_penalty',
        learning_rate_schedule='linear', gradient_graph='xla_update')
    return config


def cartpole_novel():
    """Cart-pole without its velocities: partially observed, for recurrent policies.

    The cart's velocity (index 1) and the pole's angular velocity (index 3) are
    zeroed, as in rl-baselines3-zoo's CartPoleNoVel. BatchPPO's KL penalty,
    chosen on tuning seed 101: it held 500 from 15k steps on, where the clipped
    objective reached it at 20k and dipped below it twice (docs/recurrent.md).
    """
    config = cartpole()
    config.update(
        observation_mask=(1, 3), network='recurrent_categorical', minibatch_size=None,
        chunk_length=16, batch_size=8, objective='kl_penalty', gradient_graph='xla_update')
    return config


def popgym():
    """A task of the POPGym memory suite with a recurrent policy; pick it with --set env=...

    POPGym (Morad et al., 2023) tests recall, counting and partially observed
    control; every task's return lies in [-1, 1], and its observations and
    actions are Discrete, MultiDiscrete, Tuple or Box spaces, which the policy
    encodes and picks its head for (`network='recurrent'`). Any POPGym id
    works: `--set env=popgym:popgym-RepeatFirstEasy-v0`. Each rollout of 128
    steps trains as one sequence (chunks as long as the rollout), so the
    gradient reaches back across most of an Easy task's episode. Needs the
    `popgym` extra.
    """
    config = default()
    config.update(
        env='popgym:popgym-RepeatPreviousEasy-v0', max_length=1024, steps=1e6,
        eval_every=50_000, num_agents=16, rollout_length=128, network='recurrent',
        policy_layers=(128, 128), value_layers=(128, 128),
        objective='clip', discount=0.99, gae_lambda=0.95, learning_rate=5e-4,
        learning_rate_schedule='linear', update_epochs=10, minibatch_size=None,
        chunk_length=128, batch_size=4, entropy_coef=0.01, max_gradient_norm=0.5,
        reward_normalization='none', gradient_graph='xla_update')
    return config


def popgym_feedforward():
    """The memoryless partner of `popgym`: the same settings with a feed-forward policy.

    What it scores on a POPGym task is what can be done without memory, the
    floor that the recurrent config's scores are read against.
    """
    config = popgym()
    config.update(
        network='feed_forward', minibatch_size=256, chunk_length=None, batch_size=None,
        gradient_graph='inline')
    return config


# Ant-v5's observation: 27 positions and velocities, then 78 contact forces.
_ANT_CONTACT_FORCES = tuple(range(27, 105))


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
    """Configuration for MuJoCo's half cheetah task.

    Tuned from rl-baselines3-zoo's settings with `python -m agents.scripts.tune
    --config=cheetah --space=benchmarks/tune_spaces/cheetah.yaml` on seed 100
    (its best trial of 13): rollouts of 256 steps, 8 epochs of 32-step
    minibatches, a learning rate decaying from 1.33e-4, clip 0.255 and GAE
    0.904 (benchmarks/results/tune/cheetah/). The whole update runs as one
    XLA-compiled function (`xla_update`).

    The learning rate decays to a floor of 3.3e-5 rather than to zero, for
    runs still climbing at the budget: it scored 5,997 against 5,989 on
    tuning seeds 100-101 and 6,540 against 5,738 at 1M on seeds 0-2
    (benchmarks/results/learning/ablations/cheetah_final_learning_rate/).
    """
    return _mujoco(
        'HalfCheetah-v5', discount=0.98, gae_lambda=0.904, learning_rate=1.33e-4,
        learning_rate_schedule='linear', final_learning_rate=3.3e-5,
        entropy_coef=3.51e-4, clip_ratio=0.255,
        init_std=0.128, rollout_length=256, update_epochs=8, minibatch_size=32,
        max_gradient_norm=0.8, value_coef=1.16, gradient_graph='xla_update')


def walker():
    """Configuration for MuJoCo's two-legged walker task.

    Tuned with `python -m agents.scripts.tune --config=walker
    --space=benchmarks/tune_spaces/walker.yaml` on seed 101 (its best trial of
    18): tanh 256-unit networks, rollouts of 512 steps, 20 epochs of 256-step
    minibatches, a constant learning rate of 3.15e-5, clip 0.217, GAE 0.962,
    an initial noise of 0.415 and a value loss weight of 0.629, with the
    whole update compiled by XLA (benchmarks/results/tune/walker/).

    The learning rate starts at 6e-5 and decays linearly to 1.5e-5, about
    the study's mean rate spent earlier: 4,769 against 4,324 at 1M on tuning
    seeds 100-101, and 4,222 against 4,111 on seeds 0-2
    (benchmarks/results/learning/ablations/walker_final_learning_rate/).
    """
    return _mujoco(
        'Walker2d-v5', activation='tanh', init_std=0.415, learning_rate=6e-5,
        learning_rate_schedule='linear', final_learning_rate=1.5e-5,
        entropy_coef=2.38e-4, clip_ratio=0.217, gae_lambda=0.962, rollout_length=512,
        update_epochs=20, minibatch_size=256, max_gradient_norm=1.0, value_coef=0.629,
        gradient_graph='xla_update')


def hopper():
    """Configuration for MuJoCo's one-legged hopper task.

    Tuned with `python -m agents.scripts.tune --config=hopper
    --space=benchmarks/tune_spaces/hopper.yaml` on seed 100 (its best trial of
    25): rollouts of 512 steps of 8 environments, 10 epochs of 64-step
    minibatches, a constant learning rate of 1.17e-4, clip 0.187, GAE 0.914
    and an initial noise of 0.685, on CleanRL's tanh 64-unit networks with
    value clipping (benchmarks/results/tune/hopper/).

    Chosen over 16 environments at a rate of 1.65e-4 on ten seeds each,
    which learn later: 2,971 against 2,783 at 1M on tuning seeds 104-109,
    and 3,150 against 3,004 on seeds 0-9, where seeds 0-2 alone scored
    3,287 against 3,330
    (benchmarks/results/learning/ablations/hopper_environments/).
    """
    return _mujoco(
        'Hopper-v5', rollout_length=512, policy_layers=(64, 64), value_layers=(64, 64),
        activation='tanh', init_std=0.685, learning_rate=1.17e-4, clip_ratio=0.187,
        gae_lambda=0.914, entropy_coef=1.87e-5, update_epochs=10, minibatch_size=64,
        value_clip=0.2, value_coef=0.965)


def ant():
    """Configuration for MuJoCo's four-legged ant task.

    Tuned with `python -m agents.scripts.tune --config=ant
    --space=benchmarks/tune_spaces/ant.yaml` on seed 100 (its best trial of
    9): 16 environments with rollouts of 512 steps, a tanh 256-unit policy and
    64-unit value network, 20 epochs of 256-step minibatches, a learning rate
    decaying linearly from 1.65e-4, clip 0.157, GAE 0.874 and an initial
    noise of 0.394, with the whole update compiled by XLA.

    The policy does not see the 78 contact forces that end Ant-v5's
    observation, as on Ant-v4, which leaves them out by default, and on the
    v2/v3 tasks, whose MuJoCo bindings reported them as zeros. Hiding them
    raised the score at 1M on tuning seeds 100-101 from 3,077 to 3,761 and on
    seeds 0-2 from 2,820 to 3,518
    (benchmarks/results/learning/ablations/ant_contact_forces/). The
    learning rate then decays to a floor of 5.5e-5 rather than to zero:
    3,960 on the tuning seeds, 3,702 on seeds 0-2
    (benchmarks/results/learning/ablations/ant_final_learning_rate/).
    """
    return _mujoco(
        'Ant-v5', value_layers=(64, 64), activation='tanh', init_std=0.394,
        num_agents=16, rollout_length=512, learning_rate=1.65e-4,
        learning_rate_schedule='linear', final_learning_rate=5.5e-5,
        entropy_coef=4.06e-6, clip_ratio=0.157,
        gae_lambda=0.874, update_epochs=20, minibatch_size=256,
        gradient_graph='xla_update', observation_mask=_ANT_CONTACT_FORCES)


def humanoid():
    """Configuration for MuJoCo's humanoid task.

    Tuned with `python -m agents.scripts.tune --config=humanoid
    --space=benchmarks/tune_spaces/humanoid.yaml` on seed 100 (its trial 2,
    the first whose humanoid learned to walk): rollouts of 256 steps, 12 epochs
    of 256-step minibatches, a learning rate decaying linearly from 2.63e-4,
    discount 0.99, GAE 0.855, clip 0.261 and an initial noise of 0.577, on
    the shared ReLU 256-unit networks (benchmarks/results/tune/humanoid/);
    rl-baselines3-zoo's settings, shipped before, stood at about 600. Its ten
    seeds spread widely at 1M: some stay below half of the others
    (docs/results.md#mujoco).
    """
    return _mujoco(
        'Humanoid-v5', discount=0.99, gae_lambda=0.855, learning_rate=2.63e-4,
        learning_rate_schedule='linear', entropy_coef=5.43e-6, clip_ratio=0.261,
        init_std=0.577, rollout_length=256, update_epochs=12, minibatch_size=256,
        max_gradient_norm=2.0, value_coef=0.86)
