"""The best trial of a tuning study, as a config function.

The study of the config humanoid:

    python -m agents.scripts.tune --config=humanoid
        --space=benchmarks/tune_spaces/humanoid.yaml --trials=40 --startup_trials=6
        --seeds=100 --last_evals=3 --prune_after=300000 --logdir=studies/humanoid
"""

from agents.scripts import configs


def humanoid_tuned():
    """The humanoid config with the keys of trial 2 (score 5817.6).

    Tuned at 1,000,000 steps on seeds 100; report results of other seeds.
    """
    config = configs.humanoid()
    config.update(
        clip_ratio=0.261,
        discount=0.99,
        entropy_coef=5.43e-06,
        gae_lambda=0.855,
        init_std=0.577,
        learning_rate=0.000263,
        learning_rate_schedule='linear',
        minibatch_size=256,
        rollout_length=256,
        update_epochs=12,
    )
    return config
