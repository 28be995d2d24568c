"""End-to-end tests of training: short runs that log, checkpoint and resume."""

import glob
import os
import subprocess
import sys

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


def test_command_line_runs_with_worker_processes_and_resumes(tmp_path):
    command = [
        sys.executable, '-m', 'agents.scripts.train', f'--logdir={tmp_path}',
        f'--config={__name__}:tiny_pendulum']
    environ = dict(os.environ, PYTHONPATH=os.getcwd())
    result = subprocess.run(command, capture_output=True, text=True, env=environ, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'mean score' in result.stderr and 'env steps/s' in result.stderr
    (run,) = glob.glob(str(tmp_path / '*-agents.scripts.train_test:tiny_pendulum'))
    assert os.path.exists(os.path.join(run, 'config.yaml'))
    timestamp = os.path.basename(run).split('-')[0]
    result = subprocess.run(
        command[:3] + [f'--logdir={tmp_path}', f'--timestamp={timestamp}'],
        capture_output=True, text=True, env=environ, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'Resuming run' in result.stderr
    assert 'from step 800' in result.stderr  # Continued, not restarted.


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
