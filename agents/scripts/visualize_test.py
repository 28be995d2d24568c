"""Tests of recording videos and statistics of a trained agent."""

import json
import os
import subprocess
import sys

import gymnasium as gym
import pytest

from agents.scripts import run_api
from agents.scripts import train
from agents.scripts import visualize
from agents.scripts.cli import tensorflow_log_test


def _train_tiny_run(logdir):
    """Train a few steps of pendulum, storing the config and a checkpoint in `logdir`."""
    config = run_api.make_config('pendulum')
    with config.unlocked():
        config.num_agents = 2
        config.update_every = 2
        config.eval_episodes = 2
        config.max_length = 20
        config.steps = 80
        config.update_epochs = 1
    run_api.save_config(config, logdir)
    for _ in train.train(config, logdir, 'inprocess'):
        pass


def _is_mp4(path):
    with open(path, 'rb') as file_:
        return file_.read(12)[4:8] == b'ftyp'


@pytest.mark.integration
def test_writes_a_video_and_the_statistics_of_each_episode(tmp_path):
    logdir, outdir = str(tmp_path / 'run'), str(tmp_path / 'videos')
    _train_tiny_run(logdir)
    stats = visualize.visualize(logdir, outdir, num_agents=2, num_episodes=2,
                                env_backend='inprocess')
    with open(os.path.join(outdir, 'stats.json')) as file_:
        assert json.load(file_) == stats
    assert [episode['episode'] for episode in stats['episodes']] == [0, 1]
    assert [episode['length'] for episode in stats['episodes']] == [20, 20]
    assert stats['mean_length'] == 20
    assert stats['mean_return'] < 0  # Pendulum's rewards are never positive.
    assert sorted(os.listdir(outdir)) == ['episode-000.mp4', 'episode-001.mp4', 'stats.json']
    for episode in stats['episodes']:
        assert _is_mp4(os.path.join(outdir, episode['video']))


def test_recorder_records_only_its_episodes_and_redoes_interrupted_ones(tmp_path):
    env = gym.make('Pendulum-v1', max_episode_steps=3, render_mode='rgb_array')
    recorder = visualize.EpisodeRecorder(env, str(tmp_path), episode_numbers=(4, 7))
    recorder.reset(seed=0)
    recorder.step(env.action_space.sample())
    for _ in range(3):  # The first episode is cut short by a reset; then three episodes.
        recorder.reset()
        for _ in range(3):
            recorder.step(env.action_space.sample())
    recorder.close()
    assert [episode['episode'] for episode in recorder.episodes] == [4, 7]
    assert [episode['length'] for episode in recorder.episodes] == [3, 3]
    assert sorted(os.listdir(tmp_path)) == ['episode-004.mp4', 'episode-007.mp4']
    assert all(_is_mp4(os.path.join(tmp_path, name)) for name in os.listdir(tmp_path))


@pytest.mark.filterwarnings('ignore:.*without specifying any render mode')
def test_recorder_needs_rendered_frames(tmp_path):
    recorder = visualize.EpisodeRecorder(gym.make('Pendulum-v1'), str(tmp_path), (0,))
    with pytest.raises(ValueError, match="rendered no frame.*render_mode='rgb_array'"):
        recorder.reset()
    assert not os.listdir(tmp_path)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    logdir = str(tmp_path / 'run')
    run_api.save_config(run_api.make_config('pendulum'), logdir)
    with pytest.raises(run_api.ConfigError, match='No checkpoint in .*--checkpoint='):
        visualize.visualize(logdir, str(tmp_path / 'videos'))
    with pytest.raises(run_api.ConfigError, match='has no best checkpoint'):
        visualize.visualize(logdir, str(tmp_path / 'videos'), checkpoint='best')
    with pytest.raises(run_api.ConfigError, match='No checkpoint .*missing'):
        visualize.visualize(logdir, str(tmp_path / 'videos'),
                            checkpoint=os.path.join(logdir, 'missing'))


def test_missing_run_directory_is_a_clear_error(tmp_path):
    with pytest.raises(run_api.ConfigError, match='No config.yaml in .*--logdir='):
        visualize.visualize(str(tmp_path / 'no_run'), str(tmp_path / 'videos'))


def test_envpool_backend_is_refused_as_it_cannot_render(tmp_path):
    with pytest.raises(run_api.ConfigError, match='envpool backend cannot render'):
        visualize.visualize(str(tmp_path), str(tmp_path / 'videos'), env_backend='envpool')


def test_the_script_loads_tensorflow_only_when_it_runs():
    # Environment workers import the main module of the process that starts them.
    result = subprocess.run(
        [sys.executable, '-X', 'importtime', '-c', 'import agents.scripts.visualize'],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert result.returncode == 0, result.stderr[-3000:]
    imported = [line.rsplit('|', 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith('import time:')]
    assert 'agents.scripts.visualize' in imported and 'tensorflow' not in imported


@pytest.mark.slow  # The library function's test writes videos by default.
@pytest.mark.integration
def test_command_line_writes_videos_without_display_errors(tmp_path):
    logdir, outdir = str(tmp_path / 'run'), str(tmp_path / 'videos')
    _train_tiny_run(logdir)
    environ = {
        key: value for key, value in os.environ.items()
        if key not in ('XDG_RUNTIME_DIR', 'SDL_VIDEODRIVER', 'DISPLAY', 'TF_CPP_MIN_LOG_LEVEL')}
    environ['PYTHONPATH'] = os.getcwd()
    result = subprocess.run(
        [sys.executable, '-m', 'agents.scripts.visualize', f'--logdir={logdir}',
         f'--outdir={outdir}', '--num_episodes=1'],
        capture_output=True, text=True, env=environ, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'XDG_RUNTIME_DIR' not in result.stderr + result.stdout
    # Nor do its environment workers, which import the script but not TensorFlow.
    tensorflow_log_test.assert_quiet(result.stderr)
    assert os.path.exists(os.path.join(outdir, 'episode-000.mp4'))
