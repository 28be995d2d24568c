r"""Does BatchPPO learn as well as SB3's PPO at the same step budget? Run by hand.

Trains the shipped configs with several seeds beside Stable-Baselines3 PPO with
the rl-baselines3-zoo hyperparameters (with `--trpo`, also sb3-contrib's TRPO
with the zoo's settings on the MuJoCo tasks), with one evaluation protocol for
all: every `eval_every` training steps and at the budget, the policy's mode
(SB3: `deterministic=True`) plays 10 complete episodes. It prints a markdown
table (score at 10/25/50/100% of the budget, training steps until the
threshold, wall time, and the resident memory of our runs sampled at every
evaluation) and writes PNG curves, every library on one plot per task, to
benchmarks/results/learning/.

Evaluation plays new episodes of the policy's mode on the training batch's own
environments: environment `i` of a run with seed `s` is seeded once, with
`1000 * s + i`, when it is made, and every evaluation round and every training
phase begins by resetting all of them without a seed, so evaluation and
training draw their episodes from the same seeded streams; only SB3's
evaluation (one environment, seeded `10000 + s`) and the exported-policy plays
(seeded `20000 + s`) use separately seeded environments.

Seeds 0-9 report the shipped configs and choose no setting: tuning and
ablations run on seeds from 100 on, and `--set` refuses seeds below 100.

    python benchmarks/learning.py --quick            # Pendulum and CartPole, minutes
    python benchmarks/learning.py                    # also the MuJoCo tasks, hours
    python benchmarks/learning.py --tasks=hopper --seeds=3 --jobs=2
    python benchmarks/learning.py --tasks=cheetah --sb3   # SB3 on MuJoCo too
    python benchmarks/learning.py --tasks=hopper --seeds=5 --no-sb3 --trpo
    python benchmarks/learning.py --tasks=hopper --first_seed=100 --set=num_agents=16
    python benchmarks/learning.py --report           # tables and plots of finished runs

On MuJoCo tasks SB3 would take hours per seed on a small machine, so by
default the published scores stand as reference rows; `--sb3` runs SB3's PPO
there as well, and `--trpo` sb3-contrib's TRPO. Every run is a separate
process; `--jobs` runs that many at once (they share the machine's cores, so
wall times grow with it).
"""

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import reporting

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results', 'learning')

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

# SB3 hyperparameters of rl-baselines3-zoo (hyperparams/ppo.yml); `lin_` values
# decay linearly to zero; `normalize` wraps the envs in VecNormalize.
TASKS = {
    'pendulum': Task(
        'pendulum', 'Pendulum-v1', 100_000, 5_000, -200.0,
        dict(n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
             learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4),
        {}),
    'cartpole': Task(
        'cartpole', 'CartPole-v1', 100_000, 5_000, 500.0,
        dict(n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
             ent_coef=0.0, learning_rate='lin_0.001', clip_range='lin_0.2'),
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
        dict(n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
             learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4),
        {'rl-baselines3-zoo RecurrentPPO (published, 1 run)': -218}, mask=(2,),
        control='pendulum'),
    'cartpole_novel': Task(
        'cartpole_novel', 'CartPole-v1', 100_000, 5_000, 500.0,
        dict(n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
             ent_coef=0.0, learning_rate='lin_0.001', clip_range='lin_0.2'),
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
_ZOO_CARTPOLE_NOVEL = dict(
    n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
    ent_coef=0.0, learning_rate='lin_0.001', clip_range='lin_0.2')
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
        _ZOO_CARTPOLE_NOVEL if _peer else None,
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


def run_config(task, seed, overrides=(), config_name=None):
    """The config of one of our runs: the shipped one (or another) at the task's protocol."""
    from agents.scripts import run_api
    config = run_api.make_config(config_name or task.config)
    with config.unlocked():
        config.update(
            env=task.env, seed=seed, steps=task.budget, eval_every=task.eval_every,
            eval_episodes=EVAL_EPISODES)
        if task.mask:
            config.update(observation_mask=task.mask)
        config.update(overrides)
    return config


def run_agents(task, seed, overrides, config_name=None, logdir=None):
    """Train the shipped config of the task (or another); return its evaluations and times.

    The run's directory (TensorBoard event files, checkpoints and
    `config.yaml`, which the export reads) goes under `logdir` when one is
    given, and is deleted at the end otherwise.
    """
    from agents.scripts.cli import tensorflow_log
    tensorflow_log.import_quietly()  # As the command line scripts load TensorFlow.
    from absl import logging

    from agents.scripts import run_api
    from agents.scripts import train
    logging.set_verbosity(logging.WARNING)
    config = run_config(task, seed, overrides, config_name)
    evaluations, train_seconds = [], 0.0
    with contextlib.ExitStack() as stack:
        if logdir is None:
            logdir = stack.enter_context(tempfile.TemporaryDirectory())
        else:
            run_api.save_config(config, logdir)
        for result in train.train(config, logdir, 'parallel'):
            if result.phase == 'train':
                train_seconds += result.seconds
            else:
                evaluations.append(
                    (result.step, result.score, train_seconds, resident_megabytes()))
                print(f'step {result.step}: score {result.score:.1f}', flush=True)
    return evaluations, train_seconds


def resident_megabytes():
    """Resident memory (RSS) of this process and every process it started, in MiB.

    Worker processes hold the environments, so their memory counts as the
    run's. Read from /proc; None where there is none (not Linux).
    """
    if not os.path.exists('/proc/self/statm'):
        return None
    total = 0
    for pid in process_tree():
        try:  # A process may end while it is counted; it then counts nothing.
            with open(f'/proc/{pid}/statm') as file_:
                total += int(file_.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 2**20


def status_field(pid, field):
    """A number of `/proc/<pid>/status` (Linux): VmRSS and VmHWM in KiB, PPid, ...

    Raises:
      FileNotFoundError, ProcessLookupError: If the process is gone.
      StopIteration: If the field is missing, as for a zombie's memory.
    """
    with open(f'/proc/{pid}/status') as file_:
        return next(int(line.split()[1]) for line in file_ if line.startswith(field + ':'))


def command_line(pid):
    """The command line of a process, its arguments joined by spaces (Linux)."""
    with open(f'/proc/{pid}/cmdline') as file_:
        return file_.read().replace('\0', ' ')


class MemorySampler:
    """Within the context, samples the resident memory of this process and those it started.

    Every `every` seconds it records this process's and the whole tree's
    resident memory, and each process's high-water mark (VmHWM). The sum of
    the marks bounds the peak of the whole tree from above, transients between
    samples included.

    Attributes:
      samples: List of (seconds since the start, this process's MiB, the tree's MiB).
      marks: Dict from process id to (its description, its high-water mark in MiB).
    """

    def __init__(self, every=0.5, describe=lambda pid: ''):
        self.samples, self.marks = [], {}
        self._every = every
        self._describe = describe
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @property
    def peak_megabytes(self):
        """The sum of each process's high-water mark, in MiB."""
        return sum(mark for _, mark in self.marks.values())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *unused_exception):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        start = time.perf_counter()
        own_command = command_line(os.getpid())
        while not self._stop.is_set():
            tree = 0.0
            for pid in process_tree():
                try:  # A process may end while it is read; it then counts nothing.
                    if pid != os.getpid() and command_line(pid) == own_command:
                        continue  # Forked to run another program: its pages are this one's.
                    tree += status_field(pid, 'VmRSS') / 1024
                    self.marks[pid] = (self._describe(pid), status_field(pid, 'VmHWM') / 1024)
                except (FileNotFoundError, ProcessLookupError, StopIteration):
                    continue
            own = status_field(os.getpid(), 'VmRSS') / 1024
            self.samples.append((time.perf_counter() - start, own, tree))
            self._stop.wait(self._every)


def process_tree():
    """The ids of this process and of every process it started, read from /proc (Linux)."""
    pids, pending = [], [os.getpid()]
    while pending:
        pid = pending.pop()
        pids.append(pid)
        try:
            for thread in os.listdir(f'/proc/{pid}/task'):
                with open(f'/proc/{pid}/task/{thread}/children') as file_:
                    pending.extend(int(child) for child in file_.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return pids


def run_sb3(task, seed, trpo=False):
    """Train SB3 PPO, or sb3-contrib RecurrentPPO on memory tasks, with the zoo hyperparameters.

    With `trpo`, sb3-contrib's TRPO with the zoo's TRPO hyperparameters instead.

    Returns:
      Its evaluations and training seconds.
    """
    from agents.tools import load_order
    load_order.load_triton_before_tensorflow()  # Before SB3 loads TensorFlow.
    import gymnasium
    import stable_baselines3
    from stable_baselines3.common import callbacks
    from stable_baselines3.common import env_util
    from stable_baselines3.common import vec_env
    import torch

    from agents.tools import wrappers
    torch.set_num_threads(1)
    params = dict(TRPO[task.config] if trpo else task.sb3)
    normalize = params.pop('normalize', False)
    n_envs = params.pop('n_envs', 1)
    for key, value in params.items():
        if isinstance(value, str) and value.startswith('lin_'):
            start = float(value[4:])
            params[key] = lambda progress, start=start: progress * start
    if 'policy_kwargs' in params:
        params['policy_kwargs'] = dict(
            params['policy_kwargs'], activation_fn=torch.nn.ReLU)
    def make_env():
        if task.config == 'popgym':  # RecurrentPPO takes no Tuple observations.
            from popgym import wrappers as popgym_wrappers
            return popgym_wrappers.Flatten(gymnasium.make(task.env).unwrapped)
        env = gymnasium.make(task.env)
        return wrappers.MaskObservation(env, task.mask) if task.mask else env

    env = env_util.make_vec_env(make_env, n_envs=n_envs, seed=seed)
    if normalize:
        env = vec_env.VecNormalize(env)
    if trpo:
        import sb3_contrib
        model = sb3_contrib.TRPO('MlpPolicy', env, seed=seed, device='cpu', **params)
    elif task.control:
        import sb3_contrib
        model = sb3_contrib.RecurrentPPO(
            'MlpLstmPolicy', env, seed=seed, device='cpu', **params)
    else:
        model = stable_baselines3.PPO('MlpPolicy', env, seed=seed, device='cpu', **params)

    class Evaluate(callbacks.BaseCallback):
        """Evaluates the mode every `eval_every` steps; times training apart from it."""

        def __init__(self):
            super().__init__()
            self.evaluations, self.eval_seconds, self.next_eval = [], 0.0, task.eval_every
            self.start = time.time()
            # Seeded once: each evaluation plays new episodes, as our loop's do.
            self.eval_env = make_env()
            self.eval_env.reset(seed=EVAL_SEED_OFFSET + seed)

        def _on_step(self):
            if self.num_timesteps >= self.next_eval:
                self.next_eval += task.eval_every
                self.evaluate()
            training = time.time() - self.start - self.eval_seconds
            return not task.peer_minutes or training < 60 * task.peer_minutes

        def evaluate(self):
            start = time.time()
            scores = []
            for _ in range(EVAL_EPISODES):
                observ, _ = self.eval_env.reset()
                done, score, state, first = False, 0.0, None, np.ones(1, bool)
                while not done:
                    if normalize:
                        observ = env.normalize_obs(observ)
                    action, state = model.predict(
                        observ, state=state, episode_start=first, deterministic=True)
                    first = np.zeros(1, bool)
                    observ, reward, terminated, truncated, _ = self.eval_env.step(action)
                    score += reward
                    done = terminated or truncated
                scores.append(score)
            self.eval_seconds += time.time() - start
            train_seconds = time.time() - self.start - self.eval_seconds
            self.evaluations.append((self.num_timesteps, float(np.mean(scores)), train_seconds))

    callback = Evaluate()
    model.learn(task.budget, callback=callback)
    if not callback.evaluations or callback.evaluations[-1][0] < task.budget:
        callback.evaluate()
    return callback.evaluations, callback.evaluations[-1][2]


def run_worker(args):
    """Run one training run and write its results as JSON."""
    task = TASKS[args.task]
    if args.library in ('agents', CONTROL):
        from agents.scripts.cli import config_yaml
        overrides = config_yaml.read_assignments(args.set)
        config_name = task.control if args.library == CONTROL else None
        logdir = args.logs and os.path.join(
            args.logs, f'{args.library}-{args.task}-{args.seed}')
        evaluations, seconds = run_agents(task, args.seed, overrides, config_name, logdir)
    else:
        evaluations, seconds = run_sb3(task, args.seed, trpo=args.library == TRPO_LIBRARY)
    with open(args.worker, 'w') as file_:
        json.dump(dict(
            library=args.library, task=args.task, seed=args.seed, seconds=seconds,
            evaluations=evaluations, commit=reporting.commit(),
            processor=reporting.processor(), overrides=args.set), file_)


def run_all(jobs, num_parallel, directory, extra_args, report_only=False):
    """Run (library, task, seed) jobs as processes, `num_parallel` at once.

    Each run writes `<library>-<task>-<seed>.json` into `directory`; a run
    whose file exists already is read instead of run again, so an interrupted
    benchmark continues where it stopped. With `report_only`, runs without a
    file are left out rather than started.
    """
    pending, running, results = [], [], []
    for library, task, seed in jobs:
        path = os.path.join(directory, f'{library}-{task}-{seed}.json')
        if os.path.exists(path):
            with open(path) as file_:
                results.append(json.load(file_))
        elif not report_only:
            pending.append((library, task, seed))
    from agents.scripts.cli import interrupts
    try:
        with interrupts.raised_on():
            _run_pending(pending, running, results, num_parallel, directory, extra_args)
    except interrupts.Interrupted as stop:
        for _, process, _ in running:
            process.terminate()  # The workers stop as train() stops on SIGTERM.
        for _, process, log in running:
            process.wait()
            log.close()
        print(f'Stopped by {stop.signal.name}. Finished runs are kept in {directory}: run '
              'the same command again to continue.', file=sys.stderr)
        sys.exit(stop.exit_code)
    return results


def _run_pending(pending, running, results, num_parallel, directory, extra_args):
    """Start the pending runs, `num_parallel` at once, and collect their results."""
    while pending or running:
        while pending and len(running) < num_parallel:
            library, task, seed = pending.pop(0)
            path = os.path.join(directory, f'{library}-{task}-{seed}.json')
            command = [
                sys.executable, os.path.abspath(__file__), f'--worker={path}',
                f'--library={library}', f'--task={task}', f'--seed={seed}'] + extra_args
            log = open(path + '.log', 'w')
            running.append((path, subprocess.Popen(command, stdout=log, stderr=log), log))
            print(f'started {library} {task} seed {seed}', flush=True)
        time.sleep(1)
        for entry in list(running):
            path, process, log = entry
            if process.poll() is None:
                continue
            running.remove(entry)
            log.close()
            if process.returncode:
                print(f'FAILED {path}: see {path}.log', flush=True)
                continue
            with open(path) as file_:
                results.append(json.load(file_))
            os.remove(path + '.log')
            print(f'finished {os.path.basename(path)} '
                  f'(final score {results[-1]["evaluations"][-1][1]:.1f})', flush=True)


def score_at(evaluations, step):
    """The score of the evaluation nearest to `step`.

    Evaluations fall on whole rounds of collection, so near, not on, round numbers.
    """
    return min(evaluations, key=lambda evaluation: abs(evaluation[0] - step))[1]


def first_reaching(evaluations, threshold):
    """The first evaluation (step, score, train seconds) at or above `threshold`, or None."""
    return next((each for each in evaluations if each[1] >= threshold), None)


def table(results):
    """Markdown table of the results, one row per task and library."""
    fractions = (0.1, 0.25, 0.5, 1.0)
    lines = []
    by_key = collections.defaultdict(list)
    for result in results:
        by_key[result['task'], result['library']].append(result)
    for task_name in TASKS:
        task = TASKS[task_name]
        keys = [key for key in by_key if key[0] == task_name]
        if not keys:
            continue
        milestones = [int(task.budget * fraction) for fraction in fractions]
        threshold = 'no threshold' if task.threshold is None else f'threshold {task.threshold:,g}'
        lines.append(f'\n**{title(task)}** ({threshold}, budget {task.budget:,} training '
                     'steps)\n')
        header = ' | '.join(f'score at {short_steps(step)}' for step in milestones)
        lines.append(f'| library | seeds | {header} | best so far | steps to threshold | '
                     'time to threshold | wall time (train) |')
        lines.append('|---|---:|' + '---:|' * len(milestones) + '---:|---:|---:|---:|')
        times_to = {}
        for _, library in sorted(keys):
            runs = sorted(by_key[task_name, library], key=lambda run: run['seed'])
            cells = []
            for step in milestones:
                scores = [score_at(run['evaluations'], step) for run in runs]
                cells.append(f'{np.mean(scores):,.0f} ± {np.std(scores):,.0f}')
            # The best evaluation of each run, as the run's best checkpoint keeps it.
            best = [max(each[1] for each in run['evaluations']) for run in runs]
            cells.append(f'{np.mean(best):,.0f} ± {np.std(best):,.0f}')
            reach, time_to = '-', '-'
            if task.threshold is not None:
                reached = [first_reaching(run['evaluations'], task.threshold) for run in runs]
                if all(reached):
                    times_to[library] = np.mean([each[2] for each in reached])
                    mean_steps = np.mean([each[0] for each in reached])
                    reach = f'{short_steps(mean_steps)} (all {len(runs)})'
                    time_to = _duration(times_to[library])
                else:
                    reach = f'{sum(bool(each) for each in reached)}/{len(runs)} reached'
            seconds = np.mean([run['seconds'] for run in runs])
            lines.append(f'| {library} | {len(runs)} | ' + ' | '.join(cells) +
                         f' | {reach} | {time_to} | {seconds / 60:.1f} min |')
        for name, score in task.references.items():
            lines.append(f'| {name} | - |' + ' - |' * (len(milestones) - 1) +
                         f' {score:,} | - | - | - | - |')
        memory = _memory_line(by_key.get((task_name, 'agents'), []))
        if memory:
            lines.append(memory)
        if task.control:
            lines.append(_speed_line(task_name, by_key))
        if task.peer_minutes and (task_name, 'sb3') in by_key and (task_name, 'agents') in by_key:
            lines.append(_same_budget_line(by_key[task_name, 'agents'], by_key[task_name, 'sb3']))
        if {'agents', 'sb3'} <= set(times_to):
            lines.append(f'\nTime to threshold, agents / sb3: '
                         f'{times_to["agents"] / times_to["sb3"]:.2f}x.')
        elif (task_name, 'sb3') in by_key and (task_name, 'agents') in by_key:
            lines.append(_time_to_peer_best(
                by_key[task_name, 'agents'], by_key[task_name, 'sb3']))
    return '\n'.join(lines)


def title(task):
    """The task's Gymnasium id, and the observation entries it hides."""
    if not task.mask:
        return task.env
    return f'{task.env}, observation entries {", ".join(map(str, task.mask))} hidden'


def _time_to_peer_best(ours, peers):
    """Where the peer misses the threshold: the time each library needs to reach its best.

    The peer's best is the best evaluation of the mean over its seeds; a
    library's time is the mean over its seeds of the first evaluation at or
    above it, if every seed gets there.
    """
    curve = np.mean([[each[1] for each in run['evaluations']] for run in peers], axis=0)
    best = float(np.max(curve))
    times = {}
    for library, runs in (('agents', ours), ('sb3', peers)):
        reached = [first_reaching(run['evaluations'], best) for run in runs]
        times[library] = np.mean([each[2] for each in reached]) if all(reached) else None
    if times['agents'] is None:
        return f'\nThe peer\'s best mean score {best:,.0f} is not reached by every seed of ours.'
    return (f'\nThe peer misses the threshold; time to its best mean score ({best:,.0f}): agents '
            f'{_duration(times["agents"])}, sb3 {_duration(times["sb3"])}, '
            f'{times["agents"] / times["sb3"]:.2f}x.')


def _steps_per_second(runs):
    """Mean over runs of the training steps per second of training, evaluation excluded."""
    return float(np.mean([run['evaluations'][-1][0] / run['seconds'] for run in runs]))


def _speed_line(task_name, by_key):
    """Each library's training speed on a memory task, and ours against the others'."""
    speeds = {
        library: _steps_per_second(runs) for (task, library), runs in sorted(by_key.items())
        if task == task_name}
    if 'agents' not in speeds:
        return ''
    parts = [f'{library} {speed:,.0f}' + (
        '' if library == 'agents' else f' (agents {speeds["agents"] / speed:.2f}x)')
        for library, speed in speeds.items()]
    return '\nTraining steps per second, evaluation excluded: ' + ', '.join(parts) + '.'


def _same_budget_line(ours, peers):
    """Our score at the peer's final step count and after the peer's training time."""
    steps = np.mean([run['evaluations'][-1][0] for run in peers])
    seconds = np.mean([run['seconds'] for run in peers])
    peer_score = np.mean([run['evaluations'][-1][1] for run in peers])
    at_steps = np.mean([score_at(run['evaluations'], steps) for run in ours])
    in_time = np.mean([
        [each for each in run['evaluations'] if each[2] <= seconds][-1][1] for run in ours])
    return (f'\nThe peer stopped after {_duration(seconds)} of training at '
            f'{short_steps(steps)} steps, scoring {peer_score:.3f}; agents at that step count '
            f'{at_steps:.3f}, and after that training time {in_time:.3f}.')


def _memory_line(runs):
    """Our runs' resident memory (trainer and workers) over training, if recorded."""
    samples = [
        [(each[0], each[3]) for each in run['evaluations'] if len(each) > 3 and each[3]]
        for run in runs]
    samples = [each for each in samples if each]
    if not samples:
        return None
    first = np.mean([run[0][1] for run in samples])
    last = np.mean([run[-1][1] for run in samples])
    peak = max(megabytes for run in samples for _, megabytes in run)
    return (f'\nMemory of our runs (trainer and environment workers, RSS): '
            f'{first:,.0f} MiB at the first evaluation, {last:,.0f} MiB at the budget, '
            f'peak {peak:,.0f} MiB.')


def _duration(seconds):
    """Seconds (tenths under ten) under two minutes, else minutes."""
    if seconds < 10:
        return f'{seconds:.1f} s'
    return f'{seconds:.0f} s' if seconds < 120 else f'{seconds / 60:.1f} min'


def short_steps(steps):
    """Steps as 25k or 1M."""
    return f'{steps / 1e6:.3g}M' if steps >= 1e6 else f'{steps / 1e3:.0f}k'


def plot(results, directory):
    """One PNG per task, the mean and min-max band over seeds of each library."""
    from agents.scripts.plotting import curves
    paths = []
    for task_name, task in TASKS.items():
        runs_by_library = collections.defaultdict(list)
        for result in results:
            if result['task'] == task_name:
                steps, scores = zip(*[each[:2] for each in result['evaluations']])
                runs_by_library[result['library']].append((np.array(steps), np.array(scores)))
        if runs_by_library:
            path = os.path.join(directory, f'learning_{task_name}.png')
            curves.plot_curves(dict(runs_by_library), path, f'{title(task)}: evaluation score')
            paths.append(path)
    return paths


def main():
    """Run, or only tabulate, the learning runs the command line asks for."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='Pendulum and CartPole only.')
    parser.add_argument(
        '--tasks', default=None,
        help='Comma-separated task names or groups (popgym, mujoco, quick).')
    parser.add_argument('--seeds', type=int, default=3, help='Number of seeds.')
    parser.add_argument('--first_seed', type=int, default=0,
                        help='Seeds run from this one: 0-9 report the shipped configs; '
                        f'tuning and ablations (--set) start at {FIRST_TUNING_SEED}.')
    parser.add_argument('--jobs', type=int, default=1, help='Runs at once.')
    parser.add_argument('--sb3', action='store_true', help='Run SB3 on MuJoCo tasks too.')
    parser.add_argument('--trpo', action='store_true',
                        help="Run sb3-contrib's TRPO on the MuJoCo tasks too.")
    parser.add_argument('--no-control', dest='no_control', action='store_true',
                        help='Run no feed-forward control on the memory tasks.')
    parser.add_argument('--no-sb3', dest='no_sb3', action='store_true',
                        help='Run no SB3 at all.')
    parser.add_argument('--set', action='append', default=[],
                        help='Config override KEY=VALUE for our runs (experiments), the value '
                        'read as YAML, as by train --set.')
    parser.add_argument('--out', default=RESULTS)
    parser.add_argument('--report', action='store_true',
                        help='Tabulate and plot the finished runs only; start none.')
    parser.add_argument(
        '--runs', default=None, help='Directory of the per-run results, reused when they '
        'exist (default: OUT/runs; a temporary one with --set).')
    parser.add_argument(
        '--logs', default=None, help='Keep each of our runs\' TensorBoard logs and '
        'checkpoints in DIR/<library>-<task>-<seed>/ (default: deleted after the run).')
    parser.add_argument('--worker', help=argparse.SUPPRESS)
    parser.add_argument('--library', help=argparse.SUPPRESS)
    parser.add_argument('--task', help=argparse.SUPPRESS)
    parser.add_argument('--seed', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        from agents.scripts.cli import interrupts
        try:
            return run_worker(args)
        except interrupts.Interrupted as stop:  # Ctrl-C or SIGTERM, as train() reports it.
            print(f'Run stopped by {stop.signal.name}; no result written.', flush=True)
            sys.exit(stop.exit_code)
    if args.set and args.first_seed < FIRST_TUNING_SEED:
        parser.error(f'--set runs an ablation, and seeds 0-9 choose no setting: run it on '
                     f'seeds from {FIRST_TUNING_SEED} on (--first_seed={FIRST_TUNING_SEED}).')
    if args.tasks:
        groups = dict(popgym=POPGYM_TASKS, mujoco=MUJOCO_TASKS, quick=QUICK_TASKS)
        tasks = [name for each in args.tasks.split(',') for name in groups.get(each, [each])]
    else:
        tasks = list(QUICK_TASKS) if args.quick else list(QUICK_TASKS + MUJOCO_TASKS)
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        parser.error(f'unknown tasks {unknown}; choose from {", ".join(TASKS)}')
    # Seeds outermost, so an interrupted benchmark has covered every task.
    jobs = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for task in tasks:
            jobs.append(('agents', task, seed))
            if TASKS[task].control and not args.no_control:
                jobs.append((CONTROL, task, seed))
            peer = task in QUICK_TASKS + RECURRENT_TASKS or bool(TASKS[task].peer_minutes)
            if not args.no_sb3 and (peer or args.sb3) and TASKS[task].sb3:
                jobs.append(('sb3', task, seed))
            if args.trpo and task in TRPO:
                jobs.append((TRPO_LIBRARY, task, seed))
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    runs = args.runs or (tempfile.mkdtemp() if args.set else os.path.join(args.out, 'runs'))
    os.makedirs(runs, exist_ok=True)
    extra_args = [f'--set={each}' for each in args.set]
    if args.logs:
        extra_args.append(f'--logs={os.path.abspath(args.logs)}')
    results = run_all(jobs, args.jobs, runs, extra_args, args.report)
    text = table(results)
    command = reporting.command_text(__file__)
    if not args.report:
        text += (f'\n\nCommand: `{command}`; {args.jobs} run(s) at once on '
                 f'{os.cpu_count()} cores; {(time.time() - start) / 60:.0f} min in all.\n')
    print(text)
    name = 'learning_' + '_'.join(tasks)
    with open(os.path.join(args.out, name + '.md'), 'w') as file_:
        file_.write(text)
    with open(os.path.join(args.out, name + '.json'), 'w') as file_:
        json.dump(results, file_)
    for path in plot(results, args.out):
        print(f'wrote {path}')


if __name__ == '__main__':
    main()
