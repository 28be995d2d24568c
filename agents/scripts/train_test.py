"""End-to-end tests of training: short runs that log, checkpoint and resume."""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from agents.parts import networks
from agents.scripts import configs
from agents.scripts import environments
from agents.scripts import run_api
from agents.scripts import train
from agents.scripts.cli import tensorflow_log_test
from agents.tools import checkpoints


def tiny_pendulum():
    """A pendulum config small enough for a test: a few thousand steps."""
    config = configs.pendulum()
    config.update(
        num_agents=4, update_every=4, eval_episodes=4, eval_every=400, max_length=50,
        steps=800, update_epochs=2, policy_layers=(16,), value_layers=(16,),
        rollout_length=None, objective='kl_penalty', minibatch_size=50)
    return config


def tiny_cartpole():
    config = configs.cartpole()
    config.update(
        num_agents=4, update_every=4, eval_episodes=4, eval_every=400, max_length=50,
        steps=800, update_epochs=2, policy_layers=(16,), value_layers=(16,),
        rollout_length=None)
    return config


def tiny_recurrent():
    config = tiny_pendulum()
    config.update(
        network=networks.recurrent_gaussian, chunk_length=25, batch_size=4, minibatch_size=None)
    return config


def tiny_rollout():
    """Pendulum with rollouts of 25 steps per environment and the clipped objective."""
    config = tiny_pendulum()
    config.update(rollout_length=25, objective='clip', learning_rate_schedule='linear',
                  max_gradient_norm=0.5, value_clip=0.2, reward_normalization='return')
    return config


def long_tiny_pendulum():
    """Tiny networks and a budget too large to finish during a test."""
    config = tiny_pendulum()
    config.update(steps=1e7)
    return config


def _tiny_pendulum_with(**changes):
    def config_function():
        config = tiny_pendulum()
        config.update(changes)
        return config
    return config_function


# Configs that must be refused before a run starts, as a user might mistype them.
misspelt_key = _tiny_pendulum_with(learning_rat=1e-3)
negative_steps = _tiny_pendulum_with(steps=-1000)
no_agents = _tiny_pendulum_with(num_agents=0)
unknown_task = _tiny_pendulum_with(env='Pendulm-v1')


def _train(config_function, logdir, **kwargs):
    config = run_api.make_config(f'{__name__}:{config_function.__name__}')
    return list(train.train(config, logdir, 'inprocess', **kwargs))


def _tiny_config(**changes):
    config = run_api.make_config(f'{__name__}:tiny_pendulum')
    with config.unlocked():
        config.update(changes)
    return config


def _timestamp(run):
    return os.path.basename(run).split('-', 1)[0]


def _processes_in_session(session_id, timeout=10):
    """Processes of a session alive (zombies excluded) after `timeout` seconds to end.

    A worker killed as its trainer exits may still be ending when the trainer is gone.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = subprocess.run(
            ['ps', '-eo', 'sid=,pid=,stat=,args='], capture_output=True, text=True)
        alive = [line for line in result.stdout.splitlines()
                 if int(line.split()[0]) == session_id and not line.split()[2].startswith('Z')]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _checkpoint_files(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith('model.ckpt'))


def _event_tags(directory):
    tags = set()
    for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags |= {value.tag for value in event.summary.value}
    return tags


@pytest.fixture(scope='module')
def short_run(tmp_path_factory):
    """Function of a config function: the results and directory of its run, trained once.

    Tests read the run; a test that changes it works on a copy.
    """
    runs = {}

    def run(config_function):
        if config_function not in runs:
            logdir = tmp_path_factory.mktemp(config_function.__name__)
            runs[config_function] = _train(config_function, str(logdir)), logdir
        return runs[config_function]

    return run


@pytest.mark.integration
@pytest.mark.parametrize(
    'config_function', [tiny_pendulum, tiny_cartpole, tiny_recurrent, tiny_rollout])
def test_short_run_writes_summaries_and_checkpoint(short_run, config_function):
    results, tmp_path = short_run(config_function)
    # 400 training steps, then 4 evaluation episodes, twice.
    assert [(each.phase, each.step) for each in results] == [
        ('train', 400), ('eval', 400), ('train', 800), ('eval', 800)]
    evaluations = [each for each in results if each.phase == 'eval']
    assert all(each.episodes == 4 and np.isfinite(each.score) for each in evaluations)
    assert all(each.length == 50 for each in evaluations if config_function != tiny_cartpole)
    assert 'eval' not in {each.phase for each in results[::2]}
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-800')
    # An update's summaries wait for the next step that logs, wherever it fell.
    assert {'mean_score', 'training/value_loss', 'training/policy_loss'} <= _event_tags(
        str(tmp_path / 'train'))
    assert 'mean_score' in _event_tags(str(tmp_path / 'eval'))


@pytest.mark.integration
def test_resume_continues_from_the_checkpointed_step(short_run, tmp_path):
    shutil.copytree(short_run(tiny_pendulum)[1], tmp_path, dirs_exist_ok=True)
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path)))
    assert reader.get_tensor('global_step') == 800
    config = run_api.make_config(f'{__name__}:tiny_pendulum')
    with config.unlocked():
        config.steps = 1600  # Two more cycles of training and evaluation.
    results = list(train.train(config, str(tmp_path), 'inprocess', resume=True))
    assert [each.step for each in results] == [1200, 1200, 1600, 1600]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-1600')


@pytest.mark.integration
def test_short_pendulum_run_improves_its_score():
    # The shipped config, cut to three evaluations 5k training steps apart.
    config = run_api.make_config('pendulum')
    with config.unlocked():
        config.update(steps=15360, eval_every=5120)
    evaluations = [
        result for result in train.train(config, None, 'inprocess') if result.phase == 'eval']
    assert [each.step for each in evaluations] == [5120, 10240, 15360]
    assert evaluations[-1].score > evaluations[0].score + 300


def test_resume_without_checkpoint_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    def build_nothing(*args, **kwargs):
        raise AssertionError('environments built for a run with nothing to resume')
    monkeypatch.setattr(run_api, 'define_batch_env', build_nothing)
    config = run_api.make_config(f'{__name__}:tiny_pendulum')
    with pytest.raises(run_api.ConfigError, match=(
            f'^No checkpoint in {re.escape(str(tmp_path))}. Pass --checkpoint=')):
        list(train.train(config, str(tmp_path), 'inprocess', resume=True))


@pytest.mark.integration
def test_same_seed_gives_same_first_observations_and_actions():
    def first_steps(seed):
        config = run_api.make_config(f'{__name__}:tiny_pendulum')
        with config.unlocked():
            config.seed = seed
        with tf.Graph().as_default():
            batch_env = run_api.define_batch_env(
                environments.environment_constructors(config, 4), 'inprocess')
            graph = run_api.define_simulation_graph(batch_env, config.algorithm, config)
            feed = {graph.is_training: True, graph.should_log: False, graph.force_reset: False}
            with tf.compat.v1.Session(config=run_api.session_config()) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                observations, actions = [], []
                for _ in range(3):
                    sess.run(graph.done, feed)
                    observ, action = sess.run((batch_env.observ, batch_env.action))
                    observations.append(observ)
                    actions.append(action)
            batch_env.close()
        return np.array(observations), np.array(actions)

    observations, actions = first_steps(seed=5)
    same_observations, same_actions = first_steps(seed=5)
    other_observations, _ = first_steps(seed=6)
    np.testing.assert_array_equal(observations, same_observations)
    np.testing.assert_array_equal(actions, same_actions)
    assert not np.allclose(observations, other_observations)


# A package of the user's own: a task registered on import, and configs for it.
USER_PACKAGE = {
    'mytasks/__init__.py': '',
    'mytasks/envs.py': """
import sys
import time

import gymnasium as gym
from gymnasium.envs.classic_control import pendulum


class FaultyPendulum(pendulum.PendulumEnv):
    \"\"\"A pendulum whose simulator fails (`fault='raise'`) or hangs after some steps.\"\"\"

    def __init__(self, fault, after, render_mode=None):
        super().__init__(render_mode=render_mode)
        self.fault, self.after, self.steps = fault, after, 0

    def step(self, action):
        self.steps += 1
        if self.steps > self.after:
            if self.fault == 'hang':
                print('The simulator hangs.', file=sys.stderr, flush=True)
                time.sleep(3600)
            raise FloatingPointError('the simulator diverged')
        return super().step(action)


gym.register('MyPendulum-v0', entry_point=pendulum.PendulumEnv, max_episode_steps=200)
for name, fault in [('FailingPendulum-v0', 'raise'), ('HangingPendulum-v0', 'hang')]:
    gym.register(name, entry_point=FaultyPendulum, kwargs=dict(fault=fault, after=150))
""",
    'mytasks/configs.py': """
from agents.scripts import train_test


def tiny():
    config = train_test.tiny_pendulum()
    # Registered by --register=mytasks.envs. A budget no test reaches: the run is
    # interrupted, and lowering steps in its config.yaml lets it finish.
    config.update(env='MyPendulum-v0', steps=1e7)
    return config


def failing():
    config = train_test.tiny_pendulum()
    config.update(env='mytasks.envs:FailingPendulum-v0')  # Gymnasium's way.
    return config


def hanging():
    config = train_test.tiny_pendulum()
    config.update(env='mytasks.envs:HangingPendulum-v0', env_timeout=None)
    return config
""",
}


@pytest.fixture(scope='module')
def user_package(tmp_path_factory):
    """Directory holding the user's package `mytasks`, for PYTHONPATH."""
    directory = tmp_path_factory.mktemp('user_package')
    for name, content in USER_PACKAGE.items():
        os.makedirs(directory / os.path.dirname(name), exist_ok=True)
        (directory / name).write_text(content)
    return directory


def run_command(argv, directory, environ, interrupt_on=None, signum=signal.SIGINT):
    """Run a command, sending it a signal (SIGINT, as Ctrl-C does) once its log has a text.

    The command runs in a session of its own, whose id is its process id, so
    that the processes it started can be found.

    Args:
      argv: The command.
      directory: Working directory.
      environ: Environment variables.
      interrupt_on: Text of the log line after which to interrupt, or None.
      signum: The signal to interrupt with.

    Returns:
      Tuple of the return code, the lines of stderr, and the session id.
    """
    process = subprocess.Popen(
        argv, cwd=directory, env=environ, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    watchdog = threading.Timer(300, process.kill)
    watchdog.start()
    lines = []
    try:
        for line in process.stderr:
            lines.append(line.rstrip('\n'))
            if interrupt_on and interrupt_on in line:
                process.send_signal(signum)
                interrupt_on = None
        process.wait()
    finally:
        watchdog.cancel()
    return process.returncode, lines, process.pid


def _train_command(logdir, user_package, *flags, interrupt_on=None, signum=signal.SIGINT):
    environ = dict(os.environ, PYTHONPATH=f'{user_package}{os.pathsep}{os.getcwd()}')
    environ.pop('TF_CPP_MIN_LOG_LEVEL', None)  # TensorFlow's log at its default level.
    return run_command(
        [sys.executable, '-m', 'agents.scripts.train', f'--logdir={logdir}', *flags],
        logdir, environ, interrupt_on, signum)


@pytest.mark.integration
def test_command_line_names_runs_by_timestamp_interrupts_and_resumes(tmp_path, user_package):
    # The env is registered by a module the trainer imports: workers make it too.
    flags = ['--timestamp=seed0', '--config=mytasks.configs:tiny', '--register=mytasks.envs']
    code, lines, _ = _train_command(tmp_path, user_package, *flags, interrupt_on='mean score')
    run = tmp_path / 'seed0-mytasks.configs.tiny'  # Named by the timestamp, no ':'.
    assert os.listdir(tmp_path) == [run.name]
    checkpoint = tf.train.latest_checkpoint(run)
    assert code == 130, '\n'.join(lines[-30:])
    assert lines[-1] == (
        f'Interrupted by SIGINT. Checkpoint {checkpoint} is safe; resume with: python -m '
        f'agents.scripts.train --logdir={tmp_path} --timestamp=seed0')
    # Neither the command nor its environment workers print TensorFlow's C++ log.
    tensorflow_log_test.assert_quiet('\n'.join(lines))
    step = int(checkpoint.rsplit('-', 1)[1])
    assert step > 0
    # Two more cycles of training and evaluation, as the run's new budget.
    budget = (step // 400 + 2) * 400
    config = (run / 'config.yaml').read_text()
    assert 'steps: 10000000\n' in config
    (run / 'config.yaml').write_text(config.replace('steps: 10000000\n', f'steps: {budget}\n'))
    code, lines, _ = _train_command(tmp_path, user_package, *flags)
    assert code == 0, '\n'.join(lines[-30:])
    log = '\n'.join(lines)
    assert 'Resuming run' in log and 'mean score' in log and 'env steps/s' in log
    assert f'Training from step {step} to {budget}.' in log  # Continued, not restarted.
    # Not on a terminal: plain progress lines, no carriage returns.
    assert lines[-1].startswith(f'Progress: {budget:,}/{budget:,} steps (100.0%), ')
    assert '\r' not in log
    assert tf.train.latest_checkpoint(run).endswith(f'model.ckpt-{budget}')
    assert os.listdir(tmp_path) == [run.name]


@pytest.mark.integration
def test_command_line_ends_a_failed_environment_with_its_cause(tmp_path, user_package):
    # The env `module:EnvId` is made in worker processes, which import the module.
    code, lines, _ = _train_command(
        tmp_path, user_package, '--config=mytasks.configs:failing', '--env_backend=process')
    assert code == 1
    (run,) = glob.glob(str(tmp_path / '*-mytasks.configs.failing'))
    checkpoint = tf.train.latest_checkpoint(run)
    assert lines[-1] == (
        'Training stopped: environment mytasks.envs:FailingPendulum-v0 failed with '
        'WorkerError: FloatingPointError: the simulator diverged. Full error report: '
        f'{run}/error.log. Checkpoint {checkpoint} is safe; resume with: python -m '
        f'agents.scripts.train --logdir={tmp_path} --timestamp={_timestamp(run)}')
    assert tf.train.load_checkpoint(checkpoint).get_tensor('global_step') > 0
    assert not any('Traceback' in line for line in lines)
    with open(os.path.join(run, 'error.log')) as file_:
        assert 'the simulator diverged' in file_.read()


@pytest.mark.parametrize('flags, message', [
    (['--logdri=logs'], "Unknown command line flag 'logdri'. Did you mean: logdir ?"),
    (['--logdir=logs', '--timestamp=a:b'], 'flag --timestamp=a:b: use letters, digits'),
    (['--logdir=logs'], 'pass --config=NAME for a new run or --timestamp=T to resume one'),
    (['--logdir=logs', '--config=pendulum', '--num_workers=0'], 'num_workers'),
    (['--logdir=logs', '--config=pendulum', 'steps=2000'], "Unexpected argument 'steps=2000': "
     'flags start with "--" (see --help), and config keys such as steps are set with --set'),
    (['--logdir=logs', '--config=pendulum', '--set=steps'], "--set 'steps' is not KEY=VALUE"),
    (['--logdir=logs', '--config=pendulum', '--set=policy_layers=[64'],
     "--set policy_layers: cannot read '[64' as a YAML value: "),
    (['--logdir=logs', '--config=pendulm'],
     "Unknown config 'pendulm' (did you mean 'pendulum'?). Choose one of: ant, "),
])
def test_flag_errors_are_reported_before_tensorflow_loads(tmp_path, flags, message):
    # Python's import log lists every module the command imported.
    result = subprocess.run(
        [sys.executable, '-X', 'importtime', '-m', 'agents.scripts.train', *flags],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert result.returncode == 1
    [error] = [line for line in result.stderr.splitlines() if not line.startswith('import time:')]
    assert message in error and 'default' not in error
    imported = [line.rsplit('|', 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith('import time:')]
    assert 'absl.flags' in imported and 'tensorflow' not in imported
    assert not os.listdir(tmp_path)


def test_timestamp_names_a_new_run_or_resumes_an_existing_one(tmp_path):
    logdir = str(tmp_path)
    run, resume = train.run_directory(logdir, 'pendulum', 'seed0')
    assert (run, resume) == (os.path.join(logdir, 'seed0-pendulum'), False)
    os.makedirs(run)
    assert train.run_directory(logdir, 'pendulum', 'seed0') == (run, True)
    assert train.run_directory(logdir, None, 'seed0') == (run, True)
    # Another config under the same timestamp is another run.
    other, resume = train.run_directory(logdir, 'my.module:cartpole', 'seed0')
    assert (other, resume) == (os.path.join(logdir, 'seed0-my.module.cartpole'), False)
    os.makedirs(other)
    with pytest.raises(run_api.ConfigError, match='Several runs .* pass --config'):
        train.run_directory(logdir, None, 'seed0')
    with pytest.raises(run_api.ConfigError, match='No run seed1-\\* .* pass --config'):
        train.run_directory(logdir, None, 'seed1')
    run, resume = train.run_directory(logdir, 'pendulum', None)
    assert os.path.basename(run).endswith('-pendulum') and not resume


def test_run_directory_names_are_safe_on_every_file_system():
    assert train.safe_name('pendulum') == 'pendulum'
    assert train.safe_name('my_package.configs:my-config') == 'my_package.configs.my-config'
    assert train.safe_name('a b/c\\d*e') == 'a_b_c_d_e'


@pytest.mark.integration
def test_short_run_with_environments_on_ray(tmp_path):
    ray = pytest.importorskip('ray', reason='the Ray backend needs pip install -e ".[ray]"')
    config = run_api.make_config(f'{__name__}:tiny_pendulum')
    with config.unlocked():
        config.steps = 400  # One cycle of training and evaluation.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        results = list(train.train(config, str(tmp_path), 'ray', {}))
    finally:
        ray.shutdown()
    assert [each.phase for each in results] == ['train', 'eval']
    assert np.isfinite(results[-1].score)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-400')


@pytest.mark.integration
def test_short_run_with_environments_in_envpool(tmp_path):
    pytest.importorskip('envpool', reason='the envpool backend needs pip install -e ".[envpool]"')
    config = run_api.make_config(f'{__name__}:tiny_pendulum')
    with config.unlocked():
        config.steps = 400  # One cycle of training and evaluation.
    results = list(train.train(config, str(tmp_path), 'envpool', {}))
    assert [each.phase for each in results] == ['train', 'eval']
    assert np.isfinite(results[-1].score)


# A program of the user's own that trains through the library, as benchmarks do.
LIBRARY_PROGRAM = """
import sys
from agents.scripts import run_api, train
from agents.scripts.cli import interrupts

if __name__ == '__main__':
    config = run_api.make_config('agents.scripts.train_test:long_tiny_pendulum')
    run_api.save_config(config, sys.argv[1])
    try:
        for result in train.train(config, sys.argv[1], 'parallel', dict(num_workers=1)):
            print(f'Step {result.step}, phase {result.phase}.', file=sys.stderr, flush=True)
    except interrupts.Interrupted as stop:
        sys.exit(stop.exit_code)
"""


def _train_library(logdir, interrupt_on, signum):
    environ = dict(os.environ, PYTHONPATH=os.getcwd())
    return run_command(
        [sys.executable, '-c', LIBRARY_PROGRAM, str(logdir)], logdir, environ, interrupt_on,
        signum)


@pytest.mark.integration
@pytest.mark.parametrize('through', ['command line', 'library'])
def test_sigterm_stores_a_restorable_checkpoint_and_leaves_nothing(
        tmp_path, user_package, through):
    # Training runs, and so do its worker processes and their shared memory.
    if through == 'command line':
        code, lines, session = _train_command(
            tmp_path, user_package, f'--config={__name__}:long_tiny_pendulum',
            '--env_backend=parallel', '--num_workers=1', interrupt_on='Training from step',
            signum=signal.SIGTERM)
        (run,) = glob.glob(str(tmp_path / '*-*'))
    else:
        code, lines, session = _train_library(
            tmp_path, interrupt_on='Step ', signum=signal.SIGTERM)
        run = str(tmp_path)
    assert code == 128 + signal.SIGTERM, '\n'.join(lines[-30:])
    checkpoint = tf.train.latest_checkpoint(run)
    if through == 'command line':
        assert lines[-1] == (
            f'Interrupted by SIGTERM. Checkpoint {checkpoint} is safe; resume with: python -m '
            f'agents.scripts.train --logdir={tmp_path} --timestamp={_timestamp(run)}')
    assert not _processes_in_session(session)  # Workers and forkserver ended too.
    # The segment was freed by the run, not by multiprocessing's resource tracker.
    assert not any('leaked' in line for line in lines), '\n'.join(lines[-30:])
    config = run_api.load_config(run)
    with tf.Graph().as_default():
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, config.num_agents), 'inprocess')
        graph = run_api.define_simulation_graph(batch_env, config.algorithm, config)
        store = run_api.define_checkpoints(run)
        with tf.compat.v1.Session(config=run_api.session_config()) as sess:
            assert run_api.initialize_variables(sess, store, resume=True) == checkpoint
            assert sess.run(graph.step) == int(checkpoint.rsplit('-', 1)[1])
        batch_env.close()


@pytest.mark.integration
def test_retention_holds_over_three_resumes(tmp_path):
    # A checkpoint at nearly every step: many more than the two kept.
    config = _tiny_config(keep_checkpoints=2, checkpoint_seconds=1e-3, steps=200)
    list(train.train(config, str(tmp_path), 'inprocess'))
    for steps in (400, 600, 800):
        config = _tiny_config(keep_checkpoints=2, checkpoint_seconds=1e-3, steps=steps)
        list(train.train(config, str(tmp_path), 'inprocess', resume=True))
        state = tf.train.get_checkpoint_state(str(tmp_path))
        kept = [os.path.basename(each) for each in state.all_model_checkpoint_paths]
        assert len(kept) == 2 and kept[-1] == f'model.ckpt-{steps}'
        assert _checkpoint_files(tmp_path) == sorted(
            f'{name}.{suffix}' for name in kept for suffix in ('data-00000-of-00001', 'index'))


@pytest.mark.integration
def test_a_truncated_newest_checkpoint_falls_back_and_checkpoint_chooses(tmp_path, caplog):
    list(train.train(_tiny_config(checkpoint_seconds=1e-3, steps=200), str(tmp_path),
                     'inprocess'))
    store = checkpoints.Checkpoints(None, str(tmp_path))
    older, previous, newest = store.paths()[-3:]
    data = newest + '.data-00000-of-00001'
    with open(data, 'rb') as file_:
        content = file_.read()
    with open(data, 'wb') as file_:
        file_.write(content[:len(content) // 2])
    caplog.set_level('INFO', logger='absl')  # Whatever verbosity an earlier test left.
    list(train.train(_tiny_config(steps=300), str(tmp_path), 'inprocess', resume=True))
    messages = [record.getMessage() for record in caplog.records]
    assert f'Skipping checkpoint {newest}, which does not restore: ' in '\n'.join(messages)
    assert f'Restored checkpoint {previous}.' in messages
    caplog.clear()
    list(train.train(_tiny_config(steps=300), str(tmp_path), 'inprocess', resume=True,
                     checkpoint=older))
    assert f'Restored checkpoint {older}.' in [record.getMessage() for record in caplog.records]


@pytest.mark.integration
def test_the_best_evaluation_keeps_its_checkpoint_and_resumes_with_best(tmp_path, caplog):
    logdir = str(tmp_path)
    with pytest.raises(run_api.ConfigError, match='has no best checkpoint .*--checkpoint='):
        run_api.resolve_checkpoint(logdir, 'best')
    config = _tiny_config(keep_checkpoints=1, eval_every=200)
    evaluations = [result for result in train.train(config, logdir, 'inprocess')
                   if result.phase == 'eval']
    best = max(evaluations, key=lambda result: result.score)
    record = checkpoints.read_best(logdir)
    assert (record['step'], record['score']) == (best.step, pytest.approx(best.score))
    assert record['score_std'] == pytest.approx(best.score_std)
    assert run_api.resolve_checkpoint(logdir, 'best') == record['checkpoint']
    assert _checkpoint_files(tmp_path) == ['model.ckpt-800.data-00000-of-00001',
                                           'model.ckpt-800.index']
    caplog.set_level('INFO', logger='absl')  # Whatever verbosity an earlier test left.
    results = list(train.train(
        _tiny_config(keep_checkpoints=1, eval_every=200, steps=1000), logdir, 'inprocess',
        resume=True, checkpoint=run_api.resolve_checkpoint(logdir, 'best')))
    assert f'Restored checkpoint {record["checkpoint"]}.' in caplog.messages
    assert results[0].step == best.step + 200


def _flags(tmp_path, **values):
    """The flags of train.py as parsed, with `values` set."""
    defaults = dict(logdir=str(tmp_path / 'logs'), config=None, timestamp=None, register=[],
                    checkpoint=None, env_timeout=None, set=[])
    return types.SimpleNamespace(**dict(defaults, **values))


@pytest.mark.parametrize('config_function, message', [
    ('misspelt_key', "unknown key 'learning_rat' (did you mean 'learning_rate'?)"),
    ('negative_steps', 'steps must be >= 1, got -1000'),
    ('no_agents', 'num_agents must be >= 1, got 0'),
    ('unknown_task', "cannot make environment 'Pendulm-v1'"),
])
def test_a_bad_config_is_refused_before_the_run_directory_exists(
        tmp_path, config_function, message):
    with pytest.raises(run_api.ConfigError) as error:
        train.prepare_run(_flags(tmp_path, config=f'{__name__}:{config_function}'))
    assert message in str(error.value) and '\n' not in str(error.value)
    assert not os.path.exists(tmp_path / 'logs')


def test_set_changes_keys_of_a_new_run_which_resumes_with_them(tmp_path):
    assignments = ['steps=2e3', 'policy_layers=[8, 8]', 'env=Pendulum-v1']
    run, resume, config = train.prepare_run(_flags(
        tmp_path, config=f'{__name__}:tiny_pendulum', timestamp='seed0', set=assignments))
    assert not resume and config.steps == 2000 and config.policy_layers == (8, 8)
    with open(os.path.join(run, 'config.yaml')) as file_:
        assert 'steps: 2000\n' in file_.read()
    # The command that started the run resumes it; another value is refused.
    _, resume, resumed = train.prepare_run(_flags(tmp_path, timestamp='seed0', set=assignments))
    assert resume and resumed == config
    with pytest.raises(run_api.ConfigError, match=(
            r'^--set steps=3000 differs from steps: 2000 in .*/config.yaml, the config of the '
            r'run being resumed. Edit that file')):
        train.prepare_run(_flags(tmp_path, timestamp='seed0', set=['steps=3e3']))


def test_set_of_an_unknown_key_is_refused_before_the_run_directory_exists(tmp_path):
    with pytest.raises(run_api.ConfigError) as error:
        train.prepare_run(_flags(tmp_path, config='pendulum', set=['stesp=2e6']))
    assert str(error.value) == (
        "Invalid config pendulum with stesp set: unknown key 'stesp' (did you mean 'steps'?).")
    assert not os.path.exists(tmp_path / 'logs')


def _unwritable_directory(tmp_path):
    if os.geteuid() == 0:  # Root writes anywhere but in /sys.
        return '/sys/agents-train-test'
    directory = tmp_path / 'read-only'
    directory.mkdir(mode=0o555)
    return str(directory)


def test_an_unwritable_logdir_is_refused_and_nothing_is_created(tmp_path):
    (tmp_path / 'a-file').write_text('')
    for logdir in (_unwritable_directory(tmp_path), str(tmp_path / 'a-file' / 'logs')):
        with pytest.raises(run_api.ConfigError, match='Cannot create the run directory .*: .*'
                                                      'Pass a --logdir you can write to'):
            train.prepare_run(_flags(tmp_path, logdir=logdir, config=f'{__name__}:tiny_pendulum'))
        assert not os.path.exists(logdir)


@pytest.mark.parametrize('content, message', [
    (b'env: Pendulum-v1\nseed: \xff\n', 'is not UTF-8 text: byte 0xff on line 2'),
    (b'env: [Pendulum-v1\n', 'Cannot parse'),
])
def test_a_broken_config_file_is_refused_and_the_run_is_kept(tmp_path, content, message):
    run = tmp_path / 'logs' / 'seed0-pendulum'
    run.mkdir(parents=True)
    (run / 'config.yaml').write_bytes(content)
    with pytest.raises(run_api.ConfigError, match=message):
        train.prepare_run(_flags(tmp_path, timestamp='seed0'))
    assert os.listdir(run) == ['config.yaml'] and (run / 'config.yaml').read_bytes() == content


def test_checkpoint_flag_needs_an_existing_run_and_checkpoint(tmp_path):
    with pytest.raises(run_api.ConfigError, match='--checkpoint resumes a run'):
        train.prepare_run(_flags(
            tmp_path, config=f'{__name__}:tiny_pendulum', checkpoint='model.ckpt-5'))
    assert not os.path.exists(tmp_path / 'logs')
    run, _, _ = train.prepare_run(_flags(
        tmp_path, config=f'{__name__}:tiny_pendulum', timestamp='seed0'))
    with pytest.raises(run_api.ConfigError, match='No checkpoint .*model.ckpt-5: pass the path'):
        train.prepare_run(_flags(tmp_path, timestamp='seed0', checkpoint=f'{run}/model.ckpt-5'))


def test_a_new_run_that_fails_before_its_first_checkpoint_leaves_nothing(tmp_path):
    run = tmp_path / 'run'
    for is_new, has_checkpoint, kept in [
            (True, False, False), (True, True, True), (False, False, True)]:
        run.mkdir()
        if has_checkpoint:
            (run / 'checkpoint').write_text('model_checkpoint_path: "model.ckpt-1"\n')
            (run / 'model.ckpt-1.index').write_text('')
        with pytest.raises(RuntimeError):
            with train._removed_if_it_fails_without_checkpoint(str(run), is_new):
                raise RuntimeError('the workers did not start')
        assert run.exists() == kept
        if kept:
            for path in run.iterdir():
                path.unlink()
            run.rmdir()


@pytest.mark.integration
def test_bad_input_on_the_command_line_is_one_line_and_leaves_nothing(tmp_path, user_package):
    victim = tmp_path / 'victim'
    victim.mkdir()
    logdir = tmp_path / 'logs'
    run, garbled = logdir / 'seed0-pendulum', logdir / 'seed1-pendulum'
    for each in (run, garbled):
        each.mkdir(parents=True)
    (run / 'config.yaml').write_text(
        'env: Pendulum-v1\nmax_length: 10\nsteps: 100\n'
        f'optimizer: !callable tensorflow.io.gfile:rmtree\nlearning_rate: {victim}\n')
    (garbled / 'config.yaml').write_bytes(b'env: Pendulum-v1\nseed: \xff\n')
    cases = [
        ([f'--config={__name__}:misspelt_key'], f'Invalid config {__name__}:misspelt_key: '
         "unknown key 'learning_rat' (did you mean 'learning_rate'?)."),
        ([f'--config={__name__}:unknown_task'], f'Invalid config {__name__}:unknown_task: '
         "env: cannot make environment 'Pendulm-v1'"),
        (['--config=pendulum', '--num_workers=-2'],
         'flag --num_workers=-2: -2 is not a positive integer'),
        (['--timestamp=seed0'], f"Invalid {run}/config.yaml: optimizer: "
         "'tensorflow.io.gfile:rmtree' is not a registered optimizer"),
        (['--timestamp=seed1'], f'{garbled}/config.yaml is not UTF-8 text: byte 0xff on line 2'),
    ]
    for flags, message in cases:
        code, lines, _ = _train_command(logdir, user_package, *flags)
        assert code == 1 and lines[-1].startswith(message), '\n'.join(lines[-10:])
        assert not any('Traceback' in line for line in lines)
        assert sorted(os.listdir(logdir)) == ['seed0-pendulum', 'seed1-pendulum']
        assert os.listdir(run) == os.listdir(garbled) == ['config.yaml']
    assert victim.is_dir()
    code, lines, _ = _train_command(
        logdir, user_package, '--config=pendulum', f'--logdir={_unwritable_directory(tmp_path)}')
    assert code == 1 and lines[-1].startswith('Cannot create the run directory ')


@pytest.mark.integration
@pytest.mark.parametrize('backend', ['process', 'parallel'])
def test_a_hung_environment_times_out_with_a_checkpoint_and_leaves_nothing(
        tmp_path, user_package, backend):
    code, lines, session = _train_command(
        tmp_path, user_package, '--config=mytasks.configs:hanging', f'--env_backend={backend}',
        '--env_timeout=2')
    assert code == 1, '\n'.join(lines[-30:])
    (run,) = glob.glob(str(tmp_path / '*-mytasks.configs.hanging'))
    checkpoint = tf.train.latest_checkpoint(run)
    assert lines[-1].startswith(
        'Training stopped: environment mytasks.envs:HangingPendulum-v0 failed with '
        'WorkerTimeoutError: ')
    assert re.search(r' 2\.0 s\b.* calling step\(\)', lines[-1]), lines[-1]
    assert lines[-1].endswith(
        f'. Full error report: {run}/error.log. Checkpoint {checkpoint} is safe; resume with: '
        f'python -m agents.scripts.train --logdir={tmp_path} --timestamp={_timestamp(run)}')
    assert not _processes_in_session(session)
    assert not any('leaked' in line for line in lines)  # Shared memory freed by the run.


@pytest.mark.integration
def test_sigterm_stops_a_run_waiting_for_a_hung_environment(tmp_path, user_package):
    # Without a timeout the trainer would wait for ever; SIGTERM stops the wait.
    code, lines, session = _train_command(
        tmp_path, user_package, '--config=mytasks.configs:hanging', '--env_backend=process',
        interrupt_on='The simulator hangs.', signum=signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, '\n'.join(lines[-30:])
    (run,) = glob.glob(str(tmp_path / '*-mytasks.configs.hanging'))
    checkpoint = tf.train.latest_checkpoint(run)
    assert lines[-1] == (
        f'Interrupted by SIGTERM. Checkpoint {checkpoint} is safe; resume with: python -m '
        f'agents.scripts.train --logdir={tmp_path} --timestamp={_timestamp(run)}')
    assert not _processes_in_session(session)
