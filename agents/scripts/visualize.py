r"""Render videos of a trained agent and write the returns of its episodes.

Command line:

    python -m agents.scripts.visualize --logdir=/path/to/logdir/<timestamp>-<config> \
        --outdir=/path/to/videos

restores the newest checkpoint of the run (or `--checkpoint`), runs the mode of
the policy (no exploration noise) for `--num_episodes` episodes, and writes one
video `episode-<number>.mp4` per episode and `stats.json` with the return and
length of each episode and their means.

Environment workers import this module when it runs as the main one, so it
imports TensorFlow, and the modules that do, inside the functions that use
them.
"""

import functools
import json
import os

# Frames are rendered off screen. Without a display driver named, pygame's SDL
# probes for a display and prints an error when XDG_RUNTIME_DIR is unset.
os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402
import gymnasium as gym  # noqa: E402
import imageio  # noqa: E402
import numpy as np  # noqa: E402

from agents.scripts import environments  # noqa: E402
from agents.scripts.cli import command_line  # noqa: E402
from agents.scripts.cli import tensorflow_log  # noqa: E402
from agents.tools.schema import ConfigError  # noqa: E402

_DEFAULT_FPS = 30


class EpisodeRecorder(gym.Wrapper):
    """Records the episodes of an environment as videos and keeps their statistics.

    The environment must render RGB frames (`render_mode='rgb_array'`). Each
    recorded episode gets the next number from `episode_numbers`; its frames are
    streamed into `<outdir>/episode-<number>.mp4` as the episode runs, and when it
    ends its number, video file name, return and length are appended to
    `episodes`. Episodes after the numbers run out are not recorded. The
    recorder writes its files itself, so it works inside a worker process, and
    environments with disjoint episode numbers can share one directory.
    """

    def __init__(self, env, outdir, episode_numbers):
        """Record episodes of an environment.

        Args:
          env: Environment that renders RGB frames.
          outdir: Directory for the videos; created if missing.
          episode_numbers: Numbers of the episodes to record, in order.
        """
        super().__init__(env)
        self._outdir = outdir
        self._numbers = iter(episode_numbers)
        self._fps = env.metadata.get('render_fps') or _DEFAULT_FPS
        self._writer = None
        self._current = None
        self.episodes = []

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        # An episode reset before its end is recorded again under the same number.
        number = self._discard_unfinished_episode()
        if number is None:
            number = next(self._numbers, None)
        if number is not None:
            self._start_episode(number)
        return observ, info

    def step(self, action):
        observ, reward, terminated, truncated, info = self.env.step(action)
        if self._writer is not None:
            self._current['return'] += float(reward)
            self._current['length'] += 1
            self._writer.append_data(self._render())
            if terminated or truncated:
                self._writer.close()
                self._writer = None
                self.episodes.append(self._current)
        return observ, reward, terminated, truncated, info

    def close(self):
        self._discard_unfinished_episode()
        super().close()

    def _start_episode(self, number):
        frame = self._render()
        filename = f'episode-{number:03d}.mp4'
        os.makedirs(self._outdir, exist_ok=True)
        # A macro block of 2 keeps frame sizes even, as the H.264 encoder requires.
        self._writer = imageio.v2.get_writer(
            os.path.join(self._outdir, filename), fps=self._fps, codec='libx264',
            macro_block_size=2)
        self._writer.append_data(frame)
        self._current = {'episode': number, 'video': filename, 'return': 0.0, 'length': 0}

    def _render(self):
        frame = self.env.render()
        if frame is None:
            raise ValueError(
                f'The environment {self.env} rendered no frame: create it with '
                f"render_mode='rgb_array'.")
        return np.asarray(frame, np.uint8)

    def _discard_unfinished_episode(self):
        """Remove the video of an episode that stopped before its end; return its number."""
        if self._writer is None:
            return None
        self._writer.close()
        self._writer = None
        os.remove(os.path.join(self._outdir, self._current['video']))
        return self._current['episode']


def visualize(logdir, outdir, num_agents=1, num_episodes=5, checkpoint=None,
              env_backend='parallel', backend_options=None):
    """Record videos and statistics of the greedy policy of a training run.

    The graph is the one of training, built in a fresh graph, with the policy's
    mode as actions. Episode `k` is run by environment `k % num_agents`.

    Args:
      logdir: Run directory holding `config.yaml` and the checkpoints.
      outdir: Directory for the videos and `stats.json`.
      num_agents: Environments to run in parallel; at most `num_episodes` are used.
      num_episodes: Number of episodes to record.
      checkpoint: Checkpoint path prefix to restore; 'best' for that of the run's best
        evaluation; the newest of the run if None.
      env_backend: Where environments run, see `run_api.define_batch_env`.
      backend_options: Dict of options for the environment backend.

    Raises:
      ConfigError: If the run directory, its config or the checkpoint is missing
        or cannot be used, or the backend cannot render.
      ValueError: If the numbers of agents or episodes are not positive.

    Returns:
      The statistics written to `stats.json`: a dict with the list `episodes`
      (episode, video, return, length) and `mean_return`, `mean_length`.
    """
    import tensorflow as tf

    from agents.scripts import run_api

    for name, value in (('num_agents', num_agents), ('num_episodes', num_episodes)):
        if value < 1:
            raise ValueError(f'{name} must be at least 1, got {value}.')
    if env_backend == 'envpool':
        raise ConfigError(
            'The envpool backend cannot render videos; visualize with another backend, '
            'such as --env_backend=parallel (the default).')
    config, checkpoint = _load_run(logdir, checkpoint)
    num_agents = min(num_agents, num_episodes)
    constructors = [
        _recording_environment(config, index, outdir, range(index, num_episodes, num_agents))
        for index in range(num_agents)]
    with tf.Graph().as_default(), tf.device('/cpu:0'):
        batch_env = run_api.define_batch_env(
            constructors, env_backend, timeout=config.env_timeout, **(backend_options or {}))
        try:
            graph = run_api.define_simulation_graph(batch_env, config.algorithm, config)
            store = run_api.define_checkpoints(logdir, exclude=(r'.*_temporary.*',))
            with tf.compat.v1.Session(config=run_api.session_config()) as sess:
                run_api.initialize_variables(sess, store, checkpoint, resume=True)
                _run_episodes(sess, graph, num_agents, num_episodes)
            episodes = [
                episode for index in range(num_agents) for episode in batch_env[index].episodes]
        finally:
            batch_env.close()
    stats = _write_stats(outdir, episodes)
    logging.info('Wrote %d videos to %s; mean return %.2f.',
                 len(episodes), outdir, stats['mean_return'])
    return stats


def _load_run(logdir, checkpoint):
    """Return the config of the run and the checkpoint to restore, None for the newest.

    Raises:
      ConfigError: If the run directory, its config or the checkpoint is missing.
    """
    import tensorflow as tf

    from agents.scripts import run_api

    if not os.path.isfile(os.path.join(logdir, 'config.yaml')):
        raise ConfigError(
            f'No config.yaml in {logdir}: pass --logdir=the directory of one run, such as '
            f'<logdir>/<timestamp>-<config>.')
    config = run_api.load_config(logdir)
    if checkpoint is None:
        if tf.train.latest_checkpoint(logdir) is None:
            raise ConfigError(
                f'No checkpoint in {logdir}: train the run until it stores one, or pass '
                f'--checkpoint=<path prefix such as {logdir}/model.ckpt-1000>.')
    return config, run_api.resolve_checkpoint(logdir, checkpoint)


def _recording_environment(config, index, outdir, episode_numbers):
    """Constructor of environment `index`, seeded as in training, that records episodes."""
    create = environments.environment_constructors(config, index + 1, 'rgb_array')[index]
    return functools.partial(_make_recorder, create, outdir, tuple(episode_numbers))


def _make_recorder(create, outdir, episode_numbers):
    return EpisodeRecorder(create(), outdir, episode_numbers)


def _run_episodes(sess, graph, num_agents, num_episodes):
    """Step all environments until each has finished the episodes it records."""
    needed = np.array([len(range(index, num_episodes, num_agents)) for index in range(num_agents)])
    finished = np.zeros(num_agents, int)
    feed = {graph.is_training: False, graph.should_log: False, graph.force_reset: True}
    while np.any(finished < needed):
        finished += sess.run(graph.done, feed)
        feed[graph.force_reset] = False


def _write_stats(outdir, episodes):
    """Write the episode statistics and their means to `outdir/stats.json`."""
    episodes = sorted(episodes, key=lambda episode: episode['episode'])
    stats = {
        'episodes': episodes,
        'mean_return': float(np.mean([episode['return'] for episode in episodes])),
        'mean_length': float(np.mean([episode['length'] for episode in episodes])),
    }
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, 'stats.json'), 'w') as file_:
        json.dump(stats, file_, indent=2)
    return stats


def main(argv):
    """Record the videos and statistics the flags ask for."""
    del argv  # Unused.
    tf = tensorflow_log.import_quietly()
    logging.set_verbosity(logging.INFO)
    tf.compat.v1.disable_eager_execution()
    from agents.scripts import registry  # Once TensorFlow loaded quietly.

    try:
        registry.import_modules(FLAGS.register)
        visualize(
            os.path.expanduser(FLAGS.logdir), os.path.expanduser(FLAGS.outdir),
            FLAGS.num_agents, FLAGS.num_episodes,
            FLAGS.checkpoint and os.path.expanduser(FLAGS.checkpoint),
            *command_line.backend_from_flags(FLAGS))
    except ConfigError as error:
        command_line.exit_with(str(error))


def _define_flags():
    # Defined only when run as a script, so that tests can import this module
    # together with train.py, whose flags share names with these.
    flags.DEFINE_string('logdir', None, 'Run directory holding config.yaml and checkpoints.')
    flags.DEFINE_string('outdir', None, 'Directory for the videos and stats.json.')
    flags.DEFINE_integer('num_agents', 1, 'Environments to run in parallel.', lower_bound=1)
    flags.DEFINE_integer('num_episodes', 5, 'Number of episodes to record.', lower_bound=1)
    flags.DEFINE_string(
        'checkpoint', None, 'Checkpoint path prefix to restore, or best for that of the '
        "run's best evaluation; the newest of the run if unset.")
    command_line.define_environment_flags()
    flags.mark_flags_as_required(['logdir', 'outdir'])


FLAGS = flags.FLAGS


if __name__ == '__main__':
    _define_flags()
    app.run(main, flags_parser=command_line.parse_flags)
