"""Run a training loop of alternating phases, such as training and evaluation."""

import collections
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

_Phase = collections.namedtuple(
    'Phase', 'name, writer, op, batch_size, steps, episodes, feed, log_every')

PhaseResult = collections.namedtuple(
    'PhaseResult', 'phase, step, score, score_std, length, episodes, env_steps, seconds')
PhaseResult.__doc__ = """What one phase of the loop did.

Attributes:
  phase: Name of the phase.
  step: Global step at its end: the environment steps the agent trained on.
  score: Mean score of the episodes the phase finished; NaN if none.
  score_std: Standard deviation of those scores; NaN if none.
  length: Mean length of those episodes; NaN if none (evaluation phases only).
  episodes: Number of those episodes.
  env_steps: Environment steps the phase made, counted or not.
  seconds: Wall time the phase took.
"""


class Loop:
    """Alternate phases, such as training and evaluation, logging and checkpointing.

    A phase runs its own step operation, with its own feed dict and summary
    writer (a subfolder of the log directory named after the phase). It lasts
    either a number of environment steps, which the global step counts
    (training), or a number of complete episodes, which it does not count
    (evaluation). So the global step is the number of environment steps the
    agent trained on: one run of a step phase's operation over a batch of
    eight environments advances it by eight. Summaries, reports and
    checkpoint names all use it. The global step is a variable in the graph, so
    a run restored from a checkpoint continues where it stopped.

    An episode phase resets every environment and keeps the first episode of
    each, as many rounds as it takes to finish its episodes. Taking the first
    episode of each environment, rather than whichever finish first, keeps
    long episodes from being left out of the mean.
    """

    def __init__(self, logdir, step=None, log=None, reset=None):
        """Create a loop without phases.

        Args:
          logdir: Directory for summaries; None to write none.
          step: Integer variable counting the environment steps trained on; the
            global step of the graph if None.
          log: Boolean tensor the phase operations read to decide whether to write
            summaries; a placeholder if None.
          reset: Boolean tensor forcing environments to reset; a placeholder if None.
        """
        self._logdir = logdir
        if step is None:
            step = tf.compat.v1.train.get_or_create_global_step()
        self._step = step
        self._log = tf.compat.v1.placeholder(tf.bool, (), 'log') if log is None else log
        self._reset = tf.compat.v1.placeholder(tf.bool, (), 'reset') if reset is None else reset
        self._phases = []

    @property
    def step(self):
        """Variable counting the environment steps the agent trained on."""
        return self._step

    @property
    def log(self):
        """Boolean tensor that is true on steps that should write summaries."""
        return self._log

    @property
    def reset(self):
        """Boolean tensor that is true where all environments must start anew."""
        return self._reset

    def add_phase(self, name, done, score, summary, steps=None, episodes=None,
                  log_every=None, feed=None):
        """Add a phase to the loop; give it either `steps` or `episodes`.

        Args:
          name: Name of the phase, used for logging and the summary subfolder.
          done: Boolean tensor [batch] telling which episodes ended this step.
          score: Float tensor [batch] of the current episode scores.
          summary: Summary string tensor of the step.
          steps: The phase runs until the global step reaches the next multiple
            of this; its steps advance the global step.
          episodes: The phase runs this many complete episodes; its steps do not
            advance the global step.
          log_every: Write the step's summaries every this many steps of a step
            phase; never if None. Episode phases write their score once.
          feed: Feed dict for the phase's operation.

        Raises:
          ValueError: If a phase of that name exists, or the phase has not
            exactly one positive length.
        """
        if name in [phase.name for phase in self._phases]:
            raise ValueError(f'The loop already has a phase named {name!r}.')
        if (steps is None) == (episodes is None) or int(steps or episodes) <= 0:
            raise ValueError(
                f'Phase {name!r} needs either a positive number of steps or of episodes, got '
                f'steps={steps}, episodes={episodes}.')
        done = tf.convert_to_tensor(done, tf.bool)
        score = tf.convert_to_tensor(score, tf.float32)
        summary = tf.convert_to_tensor(summary, tf.string)
        if done.shape.ndims not in (0, 1) or done.shape.ndims != score.shape.ndims:
            raise ValueError('The done and score tensors must be scalars or vectors alike.')
        writer = None
        if self._logdir:
            writer = tf.compat.v1.summary.FileWriter(
                os.path.join(self._logdir, name), tf.compat.v1.get_default_graph(),
                flush_secs=60)
        batch_size = 1 if score.shape.ndims == 0 else int(score.shape[0])
        with tf.name_scope(f'loop_{name}'):
            op = self._define_step(done, score, summary, batch_size if steps else 0)
        self._phases.append(_Phase(
            name, writer, op, batch_size, steps and int(steps), episodes and int(episodes),
            dict(feed or {}), log_every))

    def run(self, sess, checkpoints, max_step=None):
        """Run cycles of all phases until the global step reaches `max_step`.

        The cycle that reaches `max_step` runs to its end, so a training phase
        followed by an evaluation phase evaluates the agent at the budget.

        Args:
          sess: Session whose variables are initialized or restored.
          checkpoints: `checkpoints.Checkpoints` to store a checkpoint in after each
            cycle and during training phases whenever it is `due()`; None to
            store none.
          max_step: Stop once the global step reaches this; run forever if None.

        Yields:
          A `PhaseResult` at the end of each phase.
        """
        if not self._phases:
            raise ValueError('Add at least one phase to the loop before running it.')
        global_step = int(sess.run(self._step))
        while max_step is None or global_step < max_step:
            for phase in self._phases:
                if phase.steps:
                    result = self._run_steps(sess, phase, global_step, max_step, checkpoints)
                else:
                    result = self._run_episodes(sess, phase, global_step)
                global_step = result.step
                logging.info(
                    'Step %d, phase %s: %s, %.0f env steps/s.', global_step, phase.name,
                    _describe_scores(result), result.env_steps / max(result.seconds, 1e-9))
                yield result
            if checkpoints:
                self.store_checkpoint(sess, checkpoints)
        for phase in self._phases:
            if phase.writer:
                phase.writer.flush()

    def close(self):
        """Flush and close the summary writers."""
        for phase in self._phases:
            if phase.writer:
                phase.writer.close()

    def store_checkpoint(self, sess, checkpoints):
        """Store a checkpoint named after the global step.

        Args:
          sess: Session holding the variables.
          checkpoints: `checkpoints.Checkpoints` to store it in.

        Returns:
          Path prefix of the checkpoint.
        """
        return checkpoints.save(sess, int(sess.run(self._step)))

    def _run_steps(self, sess, phase, global_step, max_step, checkpoints):
        """Run a step phase up to the next multiple of its steps, or to `max_step`.

        Stores a checkpoint whenever `checkpoints` is due by wall time.
        """
        start_time, start_step = time.time(), global_step
        target = (global_step // phase.steps + 1) * phase.steps
        if max_step is not None:
            target = min(target, max_step)
        scores = []
        is_first = True
        while global_step < target:
            should_log = bool(phase.writer and phase.log_every) and (
                global_step // phase.log_every !=
                (global_step + phase.batch_size) // phase.log_every)
            feed = dict(phase.feed)
            feed.update({self._reset: is_first, self._log: should_log})
            summary, done, score, global_step = sess.run(phase.op, feed)
            global_step = int(global_step)
            scores.extend(np.atleast_1d(score)[np.atleast_1d(done)])
            if summary and should_log:
                phase.writer.add_summary(summary, global_step)
            if checkpoints and checkpoints.due():
                self.store_checkpoint(sess, checkpoints)
            is_first = False
        return _result(
            phase.name, global_step, scores, [], global_step - start_step, start_time)

    def _run_episodes(self, sess, phase, global_step):
        """Run the first episode of every environment, in rounds, until enough finished."""
        start_time, env_steps = time.time(), 0
        scores, lengths = [], []
        while len(scores) < phase.episodes:
            needed = min(phase.batch_size, phase.episodes - len(scores))
            finished = np.zeros(phase.batch_size, bool)
            round_scores = np.zeros(phase.batch_size)
            round_lengths = np.zeros(phase.batch_size, int)
            is_first = True
            while not finished[:needed].all():
                feed = dict(phase.feed)
                feed.update({self._reset: is_first, self._log: False})
                _, done, score, _ = sess.run(phase.op, feed)
                done, score = np.atleast_1d(done), np.atleast_1d(score)
                round_lengths[~finished] += 1
                newly_done = done & ~finished
                round_scores[newly_done] = score[newly_done]
                finished |= done
                env_steps += phase.batch_size
                is_first = False
            scores.extend(round_scores[:needed])
            lengths.extend(round_lengths[:needed])
        result = _result(phase.name, global_step, scores, lengths, env_steps, start_time)
        if phase.writer:
            phase.writer.add_summary(_score_summary(result), global_step)
            phase.writer.flush()
        return result

    def _define_step(self, done, score, summary, steps_counted):
        """Build the phase's operation: run the step and advance the global step."""
        with tf.control_dependencies([done, score, summary]):
            if steps_counted:
                step = self._step.assign_add(tf.cast(steps_counted, self._step.dtype))
            else:
                step = tf.identity(self._step.read_value())
            return tf.identity(summary), tf.identity(done), tf.identity(score), step


def _result(name, step, scores, lengths, env_steps, start_time):
    scores = np.asarray(scores, np.float64)
    nan = float('nan')
    return PhaseResult(
        phase=name, step=step,
        score=float(scores.mean()) if len(scores) else nan,
        score_std=float(scores.std()) if len(scores) else nan,
        length=float(np.mean(lengths)) if len(lengths) else nan,
        episodes=len(scores), env_steps=env_steps, seconds=time.time() - start_time)


def _describe_scores(result):
    if not result.episodes:
        return 'no episode finished'
    return (f'mean score {result.score:.2f} (std {result.score_std:.2f}) over '
            f'{result.episodes} episodes')


def _score_summary(result):
    """Summary of an episode phase: the mean, std and length of its episodes."""
    return tf.compat.v1.Summary(value=[
        tf.compat.v1.Summary.Value(tag='mean_score', simple_value=result.score),
        tf.compat.v1.Summary.Value(tag='std_score', simple_value=result.score_std),
        tf.compat.v1.Summary.Value(tag='mean_length', simple_value=result.length)])
