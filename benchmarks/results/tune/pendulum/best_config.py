"""The best trial of a tuning study, as a config function.

The study of the config pendulum:

    python -m agents.scripts.tune --config=pendulum
        --space=benchmarks/tune_spaces/pendulum.yaml --trials=12 --steps=20000
        --startup_trials=4 --logdir=/tmp/studies/pendulum
"""

from agents.scripts import configs


def pendulum_tuned():
    """The pendulum config with the keys of trial 5 (score -230.3).

    Tuned at 20,000 steps on seeds 100; report results of other seeds.
    """
    config = configs.pendulum()
    config.update(
        clip_ratio=0.205,
        discount=0.99,
        gae_lambda=0.912,
        init_std=0.961,
        learning_rate=0.00134,
        learning_rate_schedule='constant',
        minibatch_size=32,
        policy_layers=(128, 128),
        rollout_length=32,
        update_epochs=12,
    )
    return config
