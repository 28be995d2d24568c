"""Run a training loop of alternating phases, such as training and evaluation."""

import collections
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

from agents.tools import process_memory

_Phase = collections.namedtuple(
    'Phase', 'name, writer, op, batch_size, steps, episodes, feed, log_every, steps_per_run')

# Freed memory goes back to the system, which takes a few milliseconds, at
# most this many seconds apart, and after every run this slow: such runs
# compile or optimize graphs, which free much of the memory they used.
_RELEASE_MEMORY_EVERY = 10.0
_SLOW_RUN_SECONDS = 1.0

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
    agent trained on: a step of a step phase over a batch of eight
    environments advances it by eight. Summaries, reports and checkpoint names
    all use it. The global step is a variable in the graph, so a run restored
    from a checkpoint continues where it stopped.

    One `session.run` of a phase's operation makes several steps, as many as
    the loop feeds to `steps_per_run`, and the operation advances the global step
    after each of them with `advance_step()`, so an algorithm reading the global
    step sees it change step by step: build the operation with
    `simulate(..., steps_per_run=loop.steps_per_run, after_step=loop.advance_step)`. A step
    phase's runs never step past its end or past the budget, and a step that
    writes summaries runs alone, so the results and the summaries are those of
    single steps, and an algorithm reading `log` sees it hold for the whole run.

    An episode phase resets every environment and keeps the first episode of
    each, as many rounds as it takes to finish its episodes. Taking the first
    episode of each environment, rather than whichever finish first, keeps
    long episodes from being left out of the mean.

    After a run that took a second or more, and otherwise every ten seconds,
    the loop returns the memory the process freed to the system
    (`process_memory.release_free_memory`), so what compiling graphs took and
    freed does not stay resident.
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
        self._steps_per_run = tf.compat.v1.placeholder(tf.int32, (), 'steps_per_run')
        # What each step adds to the global step: the batch size in step phases, else zero.
        self._step_increment = tf.compat.v1.placeholder(self._step.dtype, (), 'step_increment')
        self._phases = []
        self._next_memory_release = 0.0

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

    @property
    def steps_per_run(self):
        """Int32 scalar tensor: the number of steps a phase operation makes in one run."""
        return self._steps_per_run

    def advance_step(self):
        """Build the operation a phase's operation runs after each step.

        It advances the global step by the batch size in step phases, and
        leaves it in episode phases. Pass it as `simulate`'s `after_step`.

        Returns:
          The global step after the step.
        """
        return self._step.assign_add(self._step_increment)

    def add_phase(self, name, done, score, summary, steps=None, episodes=None,
                  log_every=None, feed=None, steps_per_run=1):
        """Add a phase to the loop; give it either `steps` or `episodes`.

        The tensors are the outputs of an operation that makes `steps_per_run`
        steps and calls `advance_step()` after each, see `simulate`.

        Args:
          name: Name of the phase, used for logging and the summary subfolder.
          done: Boolean tensor [steps, batch] telling which episodes ended at
            each step of the run.
          score: Float tensor [steps, batch] of the current episode scores after
            each step.
          summary: Summary string tensor of the first step of the run.
          steps: The phase runs until the global step reaches the next multiple
            of this; its steps advance the global step.
          episodes: The phase runs this many complete episodes; its steps do not
            advance the global step.
          log_every: Write the step's summaries every this many steps of a step
            phase; never if None. Episode phases write their score once.
          feed: Feed dict for the phase's operation.
          steps_per_run: Most steps to make in one run. Episode phases may step
            past the episodes they need, which is harmless.

        Raises:
          ValueError: If a phase of that name exists, the phase has not exactly
            one positive length, or `steps_per_run` is not positive.
        """
        if name in [phase.name for phase in self._phases]:
            raise ValueError(f'The loop already has a phase named {name!r}.')
        if (steps is None) == (episodes is None) or int(steps or episodes) <= 0:
            raise ValueError(
                f'Phase {name!r} needs either a positive number of steps or of episodes, got '
                f'steps={steps}, episodes={episodes}.')
        if int(steps_per_run) <= 0:
            raise ValueError(
                f'Phase {name!r} needs a positive steps_per_run, got {steps_per_run}.')
        done = tf.convert_to_tensor(done, tf.bool)
        score = tf.convert_to_tensor(score, tf.float32)
        summary = tf.convert_to_tensor(summary, tf.string)
        if done.shape.ndims not in (1, 2) or done.shape.ndims != score.shape.ndims:
            raise ValueError(
                'The done and score tensors must be [steps] or [steps, batch] alike.')
        writer = None
        if self._logdir:
            writer = tf.compat.v1.summary.FileWriter(
                os.path.join(self._logdir, name), tf.compat.v1.get_default_graph(),
                flush_secs=60)
        batch_size = 1 if score.shape.ndims == 1 else int(score.shape[1])
        with tf.name_scope(f'loop_{name}'):
            op = self._define_step(done, score, summary)
        self._phases.append(_Phase(
            name, writer, op, batch_size, steps and int(steps), episodes and int(episodes),
            dict(feed or {}), log_every, int(steps_per_run)))

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
                    result = self._run_step_phase(sess, phase, global_step, max_step, checkpoints)
                else:
                    result = self._run_episode_phase(sess, phase, global_step)
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

    def _run_step_phase(self, sess, phase, global_step, max_step, checkpoints):
        """Run a step phase up to the next multiple of its steps, or to `max_step`.

        Stores a checkpoint whenever `checkpoints` is due by wall time, checked
        after each run.
        """
        start_time, start_step = time.time(), global_step
        target = (global_step // phase.steps + 1) * phase.steps
        if max_step is not None:
            target = min(target, max_step)
        scores = []
        is_first = True
        while global_step < target:
            should_log = _logs(phase, global_step)
            steps_per_run = 1
            # A step that logs runs alone, so the `log` the algorithm reads holds
            # for all of its run; other runs end before the next such step.
            while (not should_log and steps_per_run < phase.steps_per_run and
                   global_step + steps_per_run * phase.batch_size < target and
                   not _logs(phase, global_step + steps_per_run * phase.batch_size)):
                steps_per_run += 1
            summary, done, score, new_step = self._run(
                sess, phase, steps_per_run, reset=is_first, log=should_log)
            _check_step(phase, global_step + steps_per_run * phase.batch_size, new_step)
            scores.extend(score[done])
            if summary and should_log:
                phase.writer.add_summary(summary, global_step + phase.batch_size)
            global_step = new_step
            if checkpoints and checkpoints.due():
                self.store_checkpoint(sess, checkpoints)
            is_first = False
        return _result(
            phase.name, global_step, scores, [], global_step - start_step, start_time)

    def _run(self, sess, phase, steps_per_run, reset, log):
        """Run `steps_per_run` steps of the phase's operation.

        Returns:
          Tuple of the summary, the done flags and scores [steps_per_run, batch], and the
          global step after the run.
        """
        feed = dict(phase.feed)
        feed.update({
            self._steps_per_run: steps_per_run, self._reset: reset, self._log: log,
            self._step_increment: phase.batch_size if phase.steps else 0})
        start = time.monotonic()
        summary, done, score, global_step = sess.run(phase.op, feed)
        self._release_freed_memory(time.monotonic() - start)
        done = np.reshape(done, (steps_per_run, phase.batch_size))
        score = np.reshape(score, (steps_per_run, phase.batch_size))
        return summary, done, score, int(global_step)

    def _release_freed_memory(self, run_seconds):
        """Return the memory freed since the last time, after a slow run or every few seconds."""
        now = time.monotonic()
        if run_seconds >= _SLOW_RUN_SECONDS or now >= self._next_memory_release:
            process_memory.release_free_memory()
            self._next_memory_release = now + _RELEASE_MEMORY_EVERY

    def _run_episode_phase(self, sess, phase, global_step):
        """Run the first episode of every environment, in rounds, until enough finished.

        The steps of a run after the needed episodes finished are made but not used.
        """
        start_time, env_steps = time.time(), 0
        scores, lengths = [], []
        while len(scores) < phase.episodes:
            needed = min(phase.batch_size, phase.episodes - len(scores))
            finished = np.zeros(phase.batch_size, bool)
            round_scores = np.zeros(phase.batch_size)
            round_lengths = np.zeros(phase.batch_size, int)
            is_first = True
            while not finished[:needed].all():
                _, dones, step_scores, new_step = self._run(
                    sess, phase, phase.steps_per_run, reset=is_first, log=False)
                _check_step(phase, global_step, new_step)
                env_steps += phase.steps_per_run * phase.batch_size
                for done, score in zip(dones, step_scores):
                    if finished[:needed].all():
                        break
                    round_lengths[~finished] += 1
                    newly_done = done & ~finished
                    round_scores[newly_done] = score[newly_done]
                    finished |= done
                is_first = False
            scores.extend(round_scores[:needed])
            lengths.extend(round_lengths[:needed])
        result = _result(phase.name, global_step, scores, lengths, env_steps, start_time)
        if phase.writer:
            phase.writer.add_summary(_score_summary(result), global_step)
            phase.writer.flush()
        return result

    def _define_step(self, done, score, summary):
        """Build the phase's operation: run the steps and read the global step after them."""
        with tf.control_dependencies([done, score, summary]):
            step = tf.identity(self._step.read_value())
            return tf.identity(summary), tf.identity(done), tf.identity(score), step


def _logs(phase, global_step):
    """Whether the step of a step phase from `global_step` crosses a multiple of `log_every`."""
    return bool(phase.writer and phase.log_every) and (
        global_step // phase.log_every != (global_step + phase.batch_size) // phase.log_every)


def _check_step(phase, expected, global_step):
    """Raise if a run of the phase's operation did not leave the global step as expected."""
    if global_step != expected:
        raise RuntimeError(
            f'The operation of phase {phase.name!r} left the global step at {global_step} '
            f'instead of {expected}: build it with simulate(..., steps_per_run=loop.steps_per_run, '
            f'after_step=loop.advance_step).')


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
