r"""The benchmark tasks: configs, budgets, thresholds, peers' settings and published scores.

`learning.py` trains them, `report.py` makes the results page of their runs,
and `export_runs.py` plays the runs' exported policies; all three read the
table here.

Evaluation plays new episodes of the policy's mode on the training batch's own
environments: environment `i` of a run with seed `s` is seeded once, with
`1000 * s + i`, when it is made, and every evaluation round and every training
phase begins by resetting all of them without a seed, so evaluation and
training draw their episodes from the same seeded streams; only SB3's
evaluation (one environment, seeded `10000 + s`) and the exported-policy plays
(seeded `20000 + s`) use separately seeded environments.
"""

import collections

Task = collections.namedtuple(
    'Task', 'config, env, budget, eval_every, threshold, sb3, references, mask, control, '
    'peer_minutes', defaults=(None, None, None))
Task.__doc__ = """A benchmark task.

Attributes:
  config: Name of our shipped config.
  env: Gymnasium id.
  budget, eval_every: Training steps in all and between evaluations.
  threshold: Score that counts as solved, or None.
  sb3: The peer's hyperparameters (rl-baselines3-zoo).
  references: Published scores shown beside ours.
  mask: Observation indices hidden from both libraries (partially observed
    tasks), the peer then being sb3-contrib's RecurrentPPO; or None, which
    leaves our config's own `observation_mask`.
  control: Name of a feed-forward config trained on the same task as a
    control row, or None; where there is one, the peer is sb3-contrib's
    RecurrentPPO.
  peer_minutes: Minutes of training the peer gets before it stops short of
    the budget (RecurrentPPO would take hours), or None for the whole budget.
"""

_ZOO_MUJOCO_NETWORK = dict(log_std_init=-2, ortho_init=False, activation_fn='relu',
                           net_arch=dict(pi=[256, 256], vf=[256, 256]))

# rl-baselines3-zoo's CartPole settings, also of its CartPoleNoVel (ppo_lstm.yml).
_ZOO_CARTPOLE = dict(
    n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
    ent_coef=0.0, learning_rate='lin_0.001', clip_range='lin_0.2')
# The same for Pendulum and its PendulumNoVel.
_ZOO_PENDULUM = dict(
    n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
    learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4)

# SB3 hyperparameters of rl-baselines3-zoo (hyperparams/ppo.yml); `lin_` values
# decay linearly to zero; `normalize` wraps the envs in VecNormalize.
TASKS = {
    'pendulum': Task(
        'pendulum', 'Pendulum-v1', 100_000, 5_000, -200.0,
        _ZOO_PENDULUM,
        {}),
    'cartpole': Task(
        'cartpole', 'CartPole-v1', 100_000, 5_000, 500.0,
        _ZOO_CARTPOLE,
        {}),
    'cheetah': Task(
        'cheetah', 'HalfCheetah-v5', 1_000_000, 50_000, 3000.0,
        dict(normalize=True, n_envs=1, batch_size=64, n_steps=512, gamma=0.98,
             learning_rate=2.0633e-05, ent_coef=0.000401762, clip_range=0.1, n_epochs=20,
             gae_lambda=0.92, max_grad_norm=0.8, vf_coef=0.58096,
             policy_kwargs=_ZOO_MUJOCO_NETWORK),
        {'CleanRL ppo_continuous_action (published)': 1443,
         'rl-baselines3-zoo PPO (published)': 5819}),
    'hopper': Task(
        'hopper', 'Hopper-v5', 1_000_000, 50_000, 2300.0,
        dict(normalize=True, n_envs=1, batch_size=32, n_steps=512, gamma=0.999,
             learning_rate=9.80828e-05, ent_coef=0.00229519, clip_range=0.2, n_epochs=5,
             gae_lambda=0.99, max_grad_norm=0.7, vf_coef=0.835671,
             policy_kwargs=_ZOO_MUJOCO_NETWORK),
        {'CleanRL ppo_continuous_action (published)': 2383,
         'rl-baselines3-zoo PPO (published)': 2410}),
    'walker': Task(
        'walker', 'Walker2d-v5', 1_000_000, 50_000, 2500.0,
        dict(normalize=True, n_envs=1, batch_size=32, n_steps=512, gamma=0.99,
             learning_rate=5.05041e-05, ent_coef=0.000585045, clip_range=0.1, n_epochs=20,
             gae_lambda=0.95, max_grad_norm=1, vf_coef=0.871923),
        {'CleanRL ppo_continuous_action (published)': 2288,
         'rl-baselines3-zoo PPO (published)': 3479}),
    'ant': Task(
        'ant', 'Ant-v5', 1_000_000, 50_000, None,
        dict(normalize=True), {'rl-baselines3-zoo PPO (published)': 1327}),
    # rl-baselines3-zoo's NoVel tasks with its ppo_lstm hyperparameters.
    'pendulum_novel': Task(
        'pendulum_novel', 'Pendulum-v1', 100_000, 5_000, -200.0,
        _ZOO_PENDULUM,
        {'rl-baselines3-zoo RecurrentPPO (published, 1 run)': -218}, mask=(2,),
        control='pendulum'),
    'cartpole_novel': Task(
        'cartpole_novel', 'CartPole-v1', 100_000, 5_000, 500.0,
        _ZOO_CARTPOLE,
        {'rl-baselines3-zoo RecurrentPPO (published, 1 run)': 500}, mask=(1, 3),
        control='cartpole'),
    'humanoid': Task(
        'humanoid', 'Humanoid-v5', 1_000_000, 50_000, None,
        dict(normalize=True, n_envs=1, batch_size=256, n_steps=512, gamma=0.95,
             learning_rate=3.56987e-05, ent_coef=0.00238306, clip_range=0.3, n_epochs=5,
             gae_lambda=0.9, max_grad_norm=2, vf_coef=0.431892,
             policy_kwargs=_ZOO_MUJOCO_NETWORK),
        {}),
}
# sb3-contrib TRPO hyperparameters of rl-baselines3-zoo (hyperparams/trpo.yml): its
# MuJoCo defaults, tuned on the v4 tasks, with HalfCheetah's own KL target.
_ZOO_TRPO_MUJOCO = dict(
    normalize=True, n_envs=2, batch_size=128, n_steps=1024, gamma=0.99, gae_lambda=0.95,
    sub_sampling_factor=1, cg_max_steps=25, cg_damping=0.1, n_critic_updates=20,
    learning_rate=1e-3)
TRPO = {
    'cheetah': dict(_ZOO_TRPO_MUJOCO, target_kl=0.04), 'hopper': _ZOO_TRPO_MUJOCO,
    'walker': _ZOO_TRPO_MUJOCO, 'ant': _ZOO_TRPO_MUJOCO, 'humanoid': _ZOO_TRPO_MUJOCO}
# The library name of sb3-contrib's TRPO runs.
TRPO_LIBRARY = 'sb3-trpo'
# POPGym (Morad et al., 2023): the memory tasks of the popgym config, beside its
# feed-forward partner and, on two tasks, RecurrentPPO with the zoo's
# CartPoleNoVel settings for 20 minutes. The references are SPARC's PPO-GRU
# (Table 6: 4M steps, 3 seeds, mean of the last 100 rollouts).
_SPARC = 'SPARC PPO-GRU (published, 4M steps, 3 seeds)'
POPGYM = {
    'repeat_previous_easy': ('RepeatPreviousEasy', 0.744, True),
    'repeat_first_easy': ('RepeatFirstEasy', 0.811, False),
    'autoencode_easy': ('AutoencodeEasy', -0.469, False),
    'count_recall_easy': ('CountRecallEasy', -0.835, False),
    'higher_lower_easy': ('HigherLowerEasy', 0.495, False),
    'mine_sweeper_easy': ('MineSweeperEasy', None, False),
    'battleship_easy': ('BattleshipEasy', None, False),
    'position_only_cartpole_easy': ('PositionOnlyCartPoleEasy', None, True),
    'noisy_position_only_cartpole_easy': ('NoisyPositionOnlyCartPoleEasy', None, False),
    'noisy_position_only_pendulum_easy': ('NoisyPositionOnlyPendulumEasy', 0.311, False),
    'repeat_previous_medium': ('RepeatPreviousMedium', None, False),
    'count_recall_medium': ('CountRecallMedium', None, False),
}
for _name, (_task, _published, _peer) in POPGYM.items():
    TASKS[_name] = Task(
        'popgym', f'popgym:popgym-{_task}-v0', 1_000_000, 50_000, None,
        _ZOO_CARTPOLE if _peer else None,
        {} if _published is None else {_SPARC: _published}, control='popgym_feedforward',
        peer_minutes=20 if _peer else None)
POPGYM_TASKS = tuple(POPGYM)
QUICK_TASKS = ('pendulum', 'cartpole')
RECURRENT_TASKS = ('pendulum_novel', 'cartpole_novel')
MUJOCO_TASKS = ('cheetah', 'hopper', 'walker', 'ant', 'humanoid')
EVAL_EPISODES = 10
# The library name of the feed-forward control runs on masked tasks.
CONTROL = 'agents-feedforward'
# SB3's evaluation environment is seeded apart from its training environments.
EVAL_SEED_OFFSET = 10_000
# How our runs and the peers' are evaluated: the docstring's paragraph, which the
# results page, docs/training.md and docs/tuning.md state alike.
EVALUATION = ' '.join(next(
    paragraph for paragraph in __doc__.split('\n\n')
    if paragraph.startswith('Evaluation plays')).split())
# Seeds from this one on tune and ablate; those below report the shipped configs.
FIRST_TUNING_SEED = 100


def run_config(task, seed, overrides=None, config_name=None):
    """The config of one of our runs: the shipped one (or another) at the task's protocol.

    The task's protocol and `overrides` (`--set`) go through the config's
    schema together, so a key or value it does not take is refused here, in
    one line, before any run starts.

    Args:
      task: The `Task`.
      seed: The run's seed.
      overrides: Dict of config keys set over the protocol's, or None.
      config_name: A config to train instead of the task's own, or None.

    Raises:
      agents.scripts.run_api.ConfigError: If the schema refuses the config.
    """
    from agents.scripts import run_api
    protocol = dict(
        env=task.env, seed=seed, steps=task.budget, eval_every=task.eval_every,
        eval_episodes=EVAL_EPISODES)
    if task.mask:
        protocol.update(observation_mask=task.mask)
    return run_api.make_config(config_name or task.config, dict(protocol, **(overrides or {})))


def title(task):
    """The task's Gymnasium id, and the observation entries it hides."""
    if not task.mask:
        return task.env
    return f'{task.env}, observation entries {", ".join(map(str, task.mask))} hidden'
