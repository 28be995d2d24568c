"""End-to-end tests of training: short runs that log, checkpoint and resume."""

import glob
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

from agents.scripts import configs
from agents.scripts import environments
from agents.scripts import networks
from agents.scripts import train
from agents.scripts import utility


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
    config.update(network=networks.recurrent_gaussian, chunk_length=25, batch_size=4)
    return config


def tiny_rollout():
    """Pendulum with rollouts of 25 steps per environment and the clipped objective."""
    config = tiny_pendulum()
    config.update(rollout_length=25, objective='clip', learning_rate_schedule='linear',
                  max_gradient_norm=0.5, value_clip=0.2, reward_normalization='return')
    return config


def _train(config_function, logdir, **kwargs):
    config = utility.make_config(f'{__name__}:{config_function.__name__}')
    return list(train.train(config, logdir, 'inprocess', **kwargs))


def _event_tags(directory):
    tags = set()
    for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags |= {value.tag for value in event.summary.value}
    return tags


@pytest.mark.parametrize(
    'config_function', [tiny_pendulum, tiny_cartpole, tiny_recurrent, tiny_rollout])
def test_short_run_writes_summaries_and_checkpoint(tmp_path, config_function):
    results = _train(config_function, str(tmp_path))
    # 400 training steps, then 4 evaluation episodes, twice.
    assert [(each.phase, each.step) for each in results] == [
        ('train', 400), ('eval', 400), ('train', 800), ('eval', 800)]
    evaluations = [each for each in results if each.phase == 'eval']
    assert all(each.episodes == 4 and np.isfinite(each.score) for each in evaluations)
    assert all(each.length == 50 for each in evaluations if config_function != tiny_cartpole)
    assert 'eval' not in {each.phase for each in results[::2]}
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-800')
    assert {'mean_score', 'training/value_loss', 'training/policy_loss'} <= _event_tags(
        str(tmp_path / 'train'))
    assert 'mean_score' in _event_tags(str(tmp_path / 'eval'))


def test_resume_continues_from_the_checkpointed_step(tmp_path):
    _train(tiny_pendulum, str(tmp_path))
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(tmp_path)))
    assert reader.get_tensor('global_step') == 800
    config = utility.make_config(f'{__name__}:tiny_pendulum')
    with config.unlocked():
        config.steps = 1600  # Two more cycles of training and evaluation.
    results = list(train.train(config, str(tmp_path), 'inprocess', resume=True))
    assert [each.step for each in results] == [1200, 1200, 1600, 1600]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-1600')


def test_short_pendulum_run_improves_its_score():
    # The shipped config, cut to three evaluations 5k training steps apart.
    config = utility.make_config('pendulum')
    with config.unlocked():
        config.update(steps=15360, eval_every=5120)
    evaluations = [
        result for result in train.train(config, None, 'inprocess') if result.phase == 'eval']
    assert [each.step for each in evaluations] == [5120, 10240, 15360]
    assert evaluations[-1].score > evaluations[0].score + 300


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    config = utility.make_config(f'{__name__}:tiny_pendulum')
    with pytest.raises(utility.ConfigError, match='No checkpoint'):
        list(train.train(config, str(tmp_path), 'inprocess', resume=True))


def test_same_seed_gives_same_first_observations_and_actions():
    def first_steps(seed):
        config = utility.make_config(f'{__name__}:tiny_pendulum')
        with config.unlocked():
            config.seed = seed
        with tf.Graph().as_default():
            batch_env = utility.define_batch_env(
                environments.environment_constructors(config, 4), 'inprocess')
            graph = utility.define_simulation_graph(batch_env, config.algorithm, config)
            feed = {graph.is_training: True, graph.should_log: False, graph.force_reset: False}
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                observations, actions = [], []
                for _ in range(3):
                    sess.run(graph.done, feed)
                    observations.append(sess.run(batch_env.observ))
                    actions.append(sess.run(batch_env.action))
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
import gymnasium as gym
from gymnasium.envs.classic_control import pendulum


class FailingPendulum(pendulum.PendulumEnv):
    \"\"\"A pendulum whose simulator fails after some steps.\"\"\"

    def __init__(self, fail_after, render_mode=None):
        super().__init__(render_mode=render_mode)
        self.fail_after, self.steps = fail_after, 0

    def step(self, action):
        self.steps += 1
        if self.steps > self.fail_after:
            raise FloatingPointError('the simulator diverged')
        return super().step(action)


gym.register('MyPendulum-v0', entry_point=pendulum.PendulumEnv, max_episode_steps=200)
gym.register('FailingPendulum-v0', entry_point=FailingPendulum, kwargs=dict(fail_after=150))
""",
    'mytasks/configs.py': """
from agents.scripts import train_test


def tiny():
    config = train_test.tiny_pendulum()
    # Registered by --register=mytasks.envs. Four evaluations, to be interrupted.
    config.update(env='MyPendulum-v0', steps=1600)
    return config


def failing():
    config = train_test.tiny_pendulum()
    config.update(env='mytasks.envs:FailingPendulum-v0')  # Gymnasium's way.
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


def run_command(argv, directory, environ, interrupt_on=None):
    """Run a command, sending it SIGINT, as Ctrl-C does, once a line of its log has a text.

    Args:
      argv: The command.
      directory: Working directory.
      environ: Environment variables.
      interrupt_on: Text of the log line after which to interrupt, or None.

    Returns:
      Tuple of the return code and the lines of stderr.
    """
    process = subprocess.Popen(argv, cwd=directory, env=environ, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(300, process.kill)
    watchdog.start()
    lines = []
    try:
        for line in process.stderr:
            lines.append(line.rstrip('\n'))
            if interrupt_on and interrupt_on in line:
                process.send_signal(signal.SIGINT)
                interrupt_on = None
        process.wait()
    finally:
        watchdog.cancel()
    return process.returncode, lines


def _train_command(logdir, user_package, *flags, interrupt_on=None):
    environ = dict(os.environ, PYTHONPATH=f'{user_package}{os.pathsep}{os.getcwd()}')
    return run_command(
        [sys.executable, '-m', 'agents.scripts.train', f'--logdir={logdir}', *flags],
        logdir, environ, interrupt_on)


def test_command_line_names_runs_by_timestamp_interrupts_and_resumes(tmp_path, user_package):
    # The env is registered by a module the trainer imports: workers make it too.
    flags = ['--timestamp=seed0', '--config=mytasks.configs:tiny', '--register=mytasks.envs']
    code, lines = _train_command(tmp_path, user_package, *flags, interrupt_on='mean score')
    run = tmp_path / 'seed0-mytasks.configs.tiny'  # Named by the timestamp, no ':'.
    assert os.listdir(tmp_path) == [run.name]
    checkpoint = tf.train.latest_checkpoint(run)
    assert code == 130, '\n'.join(lines[-30:])
    assert lines[-1] == (
        f'Interrupted. Checkpoint {checkpoint} is safe; resume with: python -m '
        f'agents.scripts.train --logdir={tmp_path} --timestamp=seed0')
    step = int(checkpoint.rsplit('-', 1)[1])
    assert 0 < step < 1600
    code, lines = _train_command(tmp_path, user_package, *flags)
    assert code == 0, '\n'.join(lines[-30:])
    log = '\n'.join(lines)
    assert 'Resuming run' in log and 'mean score' in log and 'env steps/s' in log
    assert f'Training from step {step} to 1600.' in log  # Continued, not restarted.
    # Not on a terminal: plain progress lines, no carriage returns.
    assert lines[-1].startswith('Progress: 1,600/1,600 steps (100.0%), ') and '\r' not in log
    assert tf.train.latest_checkpoint(run).endswith('model.ckpt-1600')
    assert os.listdir(tmp_path) == [run.name]


def test_command_line_ends_a_failed_environment_with_its_cause(tmp_path, user_package):
    # The env `module:EnvId` is made in worker processes, which import the module.
    code, lines = _train_command(
        tmp_path, user_package, '--config=mytasks.configs:failing', '--env_backend=process')
    assert code == 1
    (run,) = glob.glob(str(tmp_path / '*-mytasks.configs.failing'))
    last_lines = lines[-3:]
    assert last_lines[0] == (
        'Training stopped: environment mytasks.envs:FailingPendulum-v0 failed with '
        'WorkerError: FloatingPointError: the simulator diverged')
    assert last_lines[1] == f'Full error report: {run}/error.log'
    checkpoint = tf.train.latest_checkpoint(run)
    assert last_lines[2].startswith(f'Checkpoint {checkpoint} is safe; resume with: ')
    assert not any('Traceback' in line for line in lines)
    with open(os.path.join(run, 'error.log')) as file_:
        assert 'the simulator diverged' in file_.read()


@pytest.mark.parametrize('flags, message', [
    (['--logdri=logs'], "Unknown command line flag 'logdri'. Did you mean: logdir ?"),
    (['--logdir=logs', '--timestamp=a:b'], 'flag --timestamp=a:b: use letters, digits'),
    (['--logdir=logs'], 'pass --config=NAME for a new run or --timestamp=T to resume one'),
    (['--logdir=logs', '--config=pendulum', '--num_workers=0'], 'num_workers'),
])
def test_flag_errors_are_reported_before_tensorflow_loads(tmp_path, flags, message):
    # Python's import log lists every module the command imported.
    result = subprocess.run(
        [sys.executable, '-X', 'importtime', '-m', 'agents.scripts.train', *flags],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert result.returncode == 1
    assert message in result.stderr
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
    with pytest.raises(utility.ConfigError, match='Several runs .* pass --config'):
        train.run_directory(logdir, None, 'seed0')
    with pytest.raises(utility.ConfigError, match='No run seed1-\\* .* pass --config'):
        train.run_directory(logdir, None, 'seed1')
    run, resume = train.run_directory(logdir, 'pendulum', None)
    assert os.path.basename(run).endswith('-pendulum') and not resume


def test_run_directory_names_are_safe_on_every_file_system():
    assert train.safe_name('pendulum') == 'pendulum'
    assert train.safe_name('my_package.configs:my-config') == 'my_package.configs.my-config'
    assert train.safe_name('a b/c\\d*e') == 'a_b_c_d_e'


def test_failure_cause_is_the_exception_of_the_failed_operation():
    def fail(value):
        raise FloatingPointError(f'diverged at {value}')

    with tf.Graph().as_default():
        result = tf.numpy_function(fail, [tf.constant(3)], tf.int32)
        with tf.compat.v1.Session() as sess:
            with pytest.raises(tf.errors.OpError) as info:
                sess.run(result)
    assert train.failure_cause(info.value.message) == 'FloatingPointError: diverged at 3'
    assert train.failure_cause('A plain message.\nMore.') == 'A plain message.'


def test_short_run_with_environments_on_ray(tmp_path):
    ray = pytest.importorskip('ray', reason='the Ray backend needs pip install -e ".[ray]"')
    config = utility.make_config(f'{__name__}:tiny_pendulum')
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
