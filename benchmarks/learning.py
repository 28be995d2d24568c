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

Every run follows one evaluation protocol, the seeding of its episodes
included, which `lib/learning_tasks.py` states (`EVALUATION`) beside the
table of tasks.

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
import time

from lib import learning_tasks
from lib import reporting
from lib import resident_memory
from lib import run_files
import numpy as np


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
    config = learning_tasks.run_config(task, seed, overrides, config_name)
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
                megabytes = resident_memory.resident_megabytes()
                evaluations.append((result.step, result.score, train_seconds, megabytes))
                print(f'step {result.step}: score {result.score:.1f}', flush=True)
    return evaluations, train_seconds


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
    params = dict(learning_tasks.TRPO[task.config] if trpo else task.sb3)
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
            self.eval_env.reset(seed=learning_tasks.EVAL_SEED_OFFSET + seed)

        def _on_step(self):
            if self.num_timesteps >= self.next_eval:
                self.next_eval += task.eval_every
                self.evaluate()
            training = time.time() - self.start - self.eval_seconds
            return not task.peer_minutes or training < 60 * task.peer_minutes

        def evaluate(self):
            start = time.time()
            scores = []
            for _ in range(learning_tasks.EVAL_EPISODES):
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
    task = learning_tasks.TASKS[args.task]
    if args.library in ('agents', learning_tasks.CONTROL):
        from agents.scripts.cli import config_yaml
        overrides = config_yaml.read_assignments(args.set)
        config_name = task.control if args.library == learning_tasks.CONTROL else None
        logdir = args.logs and os.path.join(
            args.logs, f'{args.library}-{args.task}-{args.seed}')
        evaluations, seconds = run_agents(task, args.seed, overrides, config_name, logdir)
    else:
        trpo = args.library == learning_tasks.TRPO_LIBRARY
        evaluations, seconds = run_sb3(task, args.seed, trpo=trpo)
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


def table(results):
    """Markdown table of the results, one row per task and library."""
    fractions = (0.1, 0.25, 0.5, 1.0)
    lines = []
    by_key = collections.defaultdict(list)
    for result in results:
        by_key[result['task'], result['library']].append(result)
    for task_name in learning_tasks.TASKS:
        task = learning_tasks.TASKS[task_name]
        keys = [key for key in by_key if key[0] == task_name]
        if not keys:
            continue
        milestones = [int(task.budget * fraction) for fraction in fractions]
        threshold = 'no threshold' if task.threshold is None else f'threshold {task.threshold:,g}'
        lines.append(f'\n**{learning_tasks.title(task)}** ({threshold}, budget '
                     f'{task.budget:,} training steps)\n')
        header = ' | '.join(f'score at {run_files.short_steps(step)}' for step in milestones)
        lines.append(f'| library | seeds | {header} | best so far | steps to threshold | '
                     'time to threshold | wall time (train) |')
        lines.append('|---|---:|' + '---:|' * len(milestones) + '---:|---:|---:|---:|')
        times_to = {}
        for _, library in sorted(keys):
            runs = sorted(by_key[task_name, library], key=lambda run: run['seed'])
            cells = []
            for step in milestones:
                scores = [run_files.score_at(run['evaluations'], step) for run in runs]
                cells.append(f'{np.mean(scores):,.0f} ± {np.std(scores):,.0f}')
            # The best evaluation of each run, as the run's best checkpoint keeps it.
            best = [max(each[1] for each in run['evaluations']) for run in runs]
            cells.append(f'{np.mean(best):,.0f} ± {np.std(best):,.0f}')
            reach, time_to = '-', '-'
            if task.threshold is not None:
                reached = [
                    run_files.first_reaching(run['evaluations'], task.threshold) for run in runs]
                if all(reached):
                    times_to[library] = np.mean([each[2] for each in reached])
                    mean_steps = np.mean([each[0] for each in reached])
                    reach = f'{run_files.short_steps(mean_steps)} (all {len(runs)})'
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
        reached = [run_files.first_reaching(run['evaluations'], best) for run in runs]
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
    at_steps = np.mean([run_files.score_at(run['evaluations'], steps) for run in ours])
    in_time = np.mean([
        [each for each in run['evaluations'] if each[2] <= seconds][-1][1] for run in ours])
    return (f'\nThe peer stopped after {_duration(seconds)} of training at '
            f'{run_files.short_steps(steps)} steps, scoring {peer_score:.3f}; agents at that '
            f'step count {at_steps:.3f}, and after that training time {in_time:.3f}.')


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


def plot(results, directory):
    """One PNG per task, the mean and min-max band over seeds of each library."""
    from agents.scripts.plotting import curves
    paths = []
    for task_name, task in learning_tasks.TASKS.items():
        runs_by_library = collections.defaultdict(list)
        for result in results:
            if result['task'] == task_name:
                steps, scores = zip(*[each[:2] for each in result['evaluations']])
                runs_by_library[result['library']].append((np.array(steps), np.array(scores)))
        if runs_by_library:
            path = os.path.join(directory, f'learning_{task_name}.png')
            curves.plot_curves(
                dict(runs_by_library), path, f'{learning_tasks.title(task)}: evaluation score')
            paths.append(path)
    return paths


def _check_overrides(parser, assignments, task_names, control):
    """Stop with one line if the config of a task refuses the `--set` assignments.

    The workers would each refuse them after starting; checking every run's
    config here, through the schema, refuses them before any worker starts.

    Args:
      parser: The command line's parser, whose error stops the program.
      assignments: The `--set` flags' `KEY=VALUE` strings.
      task_names: The tasks to run.
      control: Whether the feed-forward controls run too (with the same assignments).
    """
    from agents.scripts.cli import tensorflow_log
    tensorflow_log.import_quietly()
    from agents.scripts import run_api
    from agents.scripts.cli import config_yaml
    try:
        overrides = config_yaml.read_assignments(assignments)
        for name in task_names:
            task = learning_tasks.TASKS[name]
            controls = [task.control] if control and task.control else []
            for config_name in [task.config, *controls]:
                learning_tasks.run_config(
                    task, learning_tasks.FIRST_TUNING_SEED, overrides, config_name)
    except run_api.ConfigError as error:
        parser.error(str(error))


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
                        f'tuning and ablations (--set) start at '
                        f'{learning_tasks.FIRST_TUNING_SEED}.')
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
    parser.add_argument('--out', default=run_files.RESULTS)
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
    if args.set and args.first_seed < learning_tasks.FIRST_TUNING_SEED:
        first = learning_tasks.FIRST_TUNING_SEED
        parser.error(f'--set runs an ablation, and seeds 0-9 choose no setting: run it on '
                     f'seeds from {first} on (--first_seed={first}).')
    if args.tasks:
        groups = dict(popgym=learning_tasks.POPGYM_TASKS, mujoco=learning_tasks.MUJOCO_TASKS,
                      quick=learning_tasks.QUICK_TASKS)
        task_names = [
            name for each in args.tasks.split(',') for name in groups.get(each, [each])]
    else:
        task_names = list(learning_tasks.QUICK_TASKS) if args.quick else list(
            learning_tasks.QUICK_TASKS + learning_tasks.MUJOCO_TASKS)
    unknown = sorted(set(task_names) - set(learning_tasks.TASKS))
    if unknown:
        parser.error(f'unknown tasks {unknown}; choose from {", ".join(learning_tasks.TASKS)}')
    if args.set:
        _check_overrides(parser, args.set, task_names, not args.no_control)
    # Seeds outermost, so an interrupted benchmark has covered every task.
    jobs = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for task in task_names:
            jobs.append(('agents', task, seed))
            if learning_tasks.TASKS[task].control and not args.no_control:
                jobs.append((learning_tasks.CONTROL, task, seed))
            peer = (task in learning_tasks.QUICK_TASKS + learning_tasks.RECURRENT_TASKS
                    or bool(learning_tasks.TASKS[task].peer_minutes))
            if not args.no_sb3 and (peer or args.sb3) and learning_tasks.TASKS[task].sb3:
                jobs.append(('sb3', task, seed))
            if args.trpo and task in learning_tasks.TRPO:
                jobs.append((learning_tasks.TRPO_LIBRARY, task, seed))
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
    # Named for the tasks as given, so a group names its files (learning_popgym.md).
    name = 'learning_' + '_'.join((args.tasks or ','.join(task_names)).split(','))
    with open(os.path.join(args.out, name + '.md'), 'w') as file_:
        file_.write(text)
    with open(os.path.join(args.out, name + '.json'), 'w') as file_:
        json.dump(results, file_)
    for path in plot(results, args.out):
        print(f'wrote {path}')


if __name__ == '__main__':
    main()
