r"""Train a reinforcement learning agent, alternating training and evaluation.

Command line:

    python -m agents.scripts.train --logdir=/path/to/logdir --config=pendulum

writes `<logdir>/<timestamp>-<config>/` with `config.yaml`, checkpoints, and
TensorBoard summaries of the `train` and `eval` phases. Resume a run with its
timestamp: `--logdir=/path/to/logdir --timestamp=<timestamp>`.
"""

import datetime
import glob
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402
import tensorflow as tf  # noqa: E402

from agents import tools  # noqa: E402
from agents.scripts import environments  # noqa: E402
from agents.scripts import registry  # noqa: E402
from agents.scripts import utility  # noqa: E402


def _define_loop(graph, logdir, config):
    """Create the loop of a training phase followed by an evaluation phase.

    Args:
      graph: The simulation graph from `utility.define_simulation_graph`.
      logdir: Directory for checkpoints and summaries.
      config: Configuration with `eval_every` and `eval_episodes`.

    Returns:
      Loop object.
    """
    loop = tools.Loop(logdir, graph.step, graph.should_log, graph.force_reset)
    train_steps = eval_interval(config)
    loop.add_phase(
        'train', graph.done, graph.score, graph.summary, steps=train_steps,
        log_every=max(train_steps // 2, 1), feed={graph.is_training: True})
    loop.add_phase(
        'eval', graph.done, graph.score, graph.summary, episodes=config.eval_episodes,
        feed={graph.is_training: False})
    return loop


def eval_interval(config):
    """Training steps between evaluations: `eval_every`, in whole rounds of collection.

    A round is a step of every environment, or a whole rollout of every
    environment with `rollout_length`, so evaluations fall between updates.
    """
    round_steps = config.num_agents * (config.rollout_length or 1)
    return max(1, round(config.eval_every / round_steps)) * round_steps


def train(config, logdir, env_backend='process', backend_options=None, resume=False):
    """Train and evaluate the configured algorithm, yielding the result of each phase.

    The run trains for `config.steps` environment steps, evaluating the
    policy's mode over `config.eval_episodes` complete episodes every
    `config.eval_every` training steps and at the end.

    Args:
      config: Configuration AttrDict.
      logdir: Run directory for checkpoints and summaries, or None.
      env_backend: Where environments run, see `utility.define_batch_env`.
      backend_options: Dict of options for the environment backend.
      resume: Restore the newest checkpoint in `logdir` and continue from its step.

    Yields:
      `tools.loop.PhaseResult` of each training and evaluation phase.
    """
    if not config.rollout_length and config.update_every % config.num_agents:
        logging.warning(
            'The number of agents (%d) should divide the episodes per update (%d).',
            config.num_agents, config.update_every)
    with tf.Graph().as_default(), tf.device('/cpu:0'):
        batch_env = utility.define_batch_env(
            environments.environment_constructors(config, config.num_agents), env_backend,
            **(backend_options or {}))
        try:
            graph = utility.define_simulation_graph(batch_env, config.algorithm, config)
            loop = _define_loop(graph, logdir, config)
            # Environment, episode and memory variables are not stored: the
            # environments' Python state is not checkpointed, so a resumed run
            # starts new episodes.
            saver = utility.define_saver(exclude=(r'.*_temporary.*',))
            with tf.compat.v1.Session(config=utility.session_config()) as sess:
                utility.initialize_variables(sess, saver, logdir, resume=resume)
                logging.info(
                    'Training from step %d to %d.', sess.run(graph.step), int(config.steps))
                try:
                    yield from loop.run(sess, saver, int(config.steps))
                except KeyboardInterrupt:
                    logging.info('Interrupted; storing a checkpoint before stopping.')
                    raise
                finally:
                    if logdir:
                        loop.store_checkpoint(sess, saver)
            loop.close()
        finally:
            batch_env.close()


def run_directory(logdir, config_name, timestamp):
    """Directory of a new run, or of the earlier run with this timestamp.

    Raises:
      utility.ConfigError: If resuming and no or several runs match.
    """
    logdir = os.path.expanduser(logdir)
    if not timestamp:
        timestamp = datetime.datetime.now().strftime('%Y%m%dT%H%M%S')
        return os.path.join(logdir, f'{timestamp}-{config_name}'), False
    pattern = f'{timestamp}-{config_name}' if config_name else f'{timestamp}-*'
    matches = sorted(glob.glob(os.path.join(logdir, pattern)))
    if len(matches) != 1:
        found = 'no run' if not matches else f'{len(matches)} runs'
        raise utility.ConfigError(
            f'Found {found} matching {pattern} in {logdir}; pass the timestamp of exactly '
            f'one earlier run (and --config to choose among runs).')
    return matches[0], True


def main(argv):
    del argv  # Unused.
    logging.set_verbosity(logging.INFO)
    if not FLAGS.config and not FLAGS.timestamp:
        raise app.UsageError('Pass --config=NAME for a new run or --timestamp=T to resume one.')
    try:
        registry.import_modules(FLAGS.register)
        logdir, resume = run_directory(FLAGS.logdir, FLAGS.config, FLAGS.timestamp)
        if resume:
            config = utility.load_config(logdir)
            logging.info('Resuming run %s.', logdir)
        else:
            config = utility.make_config(FLAGS.config)
            utility.save_config(config, logdir)
            logging.info('Starting run %s.', logdir)
        backend, backend_options = utility.backend_from_flags(FLAGS)
        for _ in train(config, logdir, backend, backend_options, resume):
            pass
    except utility.ConfigError as error:
        raise app.UsageError(str(error)) from None


FLAGS = flags.FLAGS


def define_flags():
    """Define the command line flags; only when run as a script, so importing is free."""
    flags.DEFINE_string('logdir', None, 'Base directory for the run directories.')
    flags.DEFINE_string(
        'config', None, 'Name of a config function in agents/scripts/configs.py, or '
        'module:function for your own.')
    flags.DEFINE_string(
        'timestamp', None, 'Timestamp of an earlier run to resume from its newest checkpoint.')
    utility.define_environment_flags()
    flags.mark_flag_as_required('logdir')


if __name__ == '__main__':
    define_flags()
    app.run(main)
