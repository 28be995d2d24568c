"""Run a training loop of alternating phases, such as training and evaluation."""

import collections
import os
import time

from absl import logging
import tensorflow as tf

from agents.tools.ordered_cond import ordered_cond
from agents.tools import streaming_mean

_Phase = collections.namedtuple(
    'Phase',
    'name, writer, op, batch_size, steps, feed, report_every, log_every, checkpoint_every')


class Loop:
    """Alternate phases of a given number of steps, logging and checkpointing.

    Each phase, for example 'train' and 'eval', runs its own step operation for
    its own number of steps before the next phase takes over; then the cycle
    starts again. A phase has its own feed dict, summary writer (a subfolder of
    the log directory named after the phase), and intervals for writing
    summaries, reporting the mean score, and storing checkpoints. Steps are
    counted in environment steps: one run of a phase's operation over a batch of
    eight environments advances the global step by eight. The global step is a
    variable in the graph, so a run restored from a checkpoint continues where
    it stopped.
    """

    def __init__(self, logdir, step=None, log=None, report=None, reset=None):
        """Create a loop without phases.

        Args:
          logdir: Directory for summaries and checkpoints; None to write nothing.
          step: Integer variable counting environment steps; the global step of
            the graph if None.
          log: Boolean tensor the phase operations read to decide whether to write
            summaries; a placeholder if None.
          report: Boolean tensor telling the loop to compute the mean score; a
            placeholder if None.
          reset: Boolean tensor forcing environments to reset at the start of a
            phase; a placeholder if None.
        """
        self._logdir = logdir
        if step is None:
            step = tf.compat.v1.train.get_or_create_global_step()
        self._step = step
        self._log = tf.compat.v1.placeholder(tf.bool, (), 'log') if log is None else log
        self._report = (
            tf.compat.v1.placeholder(tf.bool, (), 'report') if report is None else report)
        self._reset = tf.compat.v1.placeholder(tf.bool, (), 'reset') if reset is None else reset
        self._phases = []

    @property
    def step(self):
        """Variable counting the environment steps of all phases."""
        return self._step

    @property
    def log(self):
        """Boolean tensor that is true on steps that should write summaries."""
        return self._log

    @property
    def reset(self):
        """Boolean tensor that is true on the first step of each phase."""
        return self._reset

    def add_phase(self, name, done, score, summary, steps, report_every=None, log_every=None,
                  checkpoint_every=None, feed=None):
        """Add a phase to the loop.

        Args:
          name: Name of the phase, used for logging and the summary subfolder.
          done: Boolean tensor [batch] telling which episodes ended this step.
          score: Float tensor [batch] of the current episode scores.
          summary: Summary string tensor of the step.
          steps: Number of environment steps this phase runs per cycle.
          report_every: Yield the mean score of finished episodes every this many
            steps of the phase; never if None.
          log_every: Write summaries every this many steps; never if None.
          checkpoint_every: Store a checkpoint every this many steps; never if None.
          feed: Feed dict for the phase's operation.

        Raises:
          ValueError: If a phase of that name exists or the step count is not
            positive.
        """
        if name in [phase.name for phase in self._phases]:
            raise ValueError(f'The loop already has a phase named {name!r}.')
        if int(steps) <= 0:
            raise ValueError(f'Phase {name!r} needs a positive number of steps, got {steps}.')
        done = tf.convert_to_tensor(done, tf.bool)
        score = tf.convert_to_tensor(score, tf.float32)
        summary = tf.convert_to_tensor(summary, tf.string)
        if done.shape.ndims is None or score.shape.ndims is None:
            raise ValueError('The rank of the done and score tensors must be known.')
        if done.shape.ndims != score.shape.ndims:
            raise ValueError('The done and score tensors must have the same rank.')
        writer = None
        if self._logdir:
            writer = tf.compat.v1.summary.FileWriter(
                os.path.join(self._logdir, name), tf.compat.v1.get_default_graph(),
                flush_secs=60)
        with tf.name_scope(f'loop_{name}'):
            op = self._define_step(done, score, summary)
        batch_size = 1 if score.shape.ndims == 0 else int(score.shape[0])
        self._phases.append(_Phase(
            name, writer, op, batch_size, int(steps), dict(feed or {}), report_every,
            log_every, checkpoint_every))

    def run(self, sess, saver, max_step=None):
        """Run the phases until the global step reaches `max_step`.

        Args:
          sess: Session whose variables are initialized or restored.
          saver: Saver for checkpoints; None to store no checkpoints.
          max_step: Stop when the global step reaches this; run forever if None.

        Yields:
          The mean score of the episodes finished since the last report, at each
          report of any phase (NaN if no episode finished).
        """
        if not self._phases:
            raise ValueError('Add at least one phase to the loop before running it.')
        global_step = int(sess.run(self._step))
        steps_made = 1
        report_time, report_step = time.time(), global_step
        while max_step is None or global_step < max_step:
            phase, epoch, steps_in = self._find_current_phase(global_step)
            phase_step = epoch * phase.steps + steps_in
            is_phase_start = steps_in < steps_made
            if is_phase_start:
                logging.info('Phase %s (phase step %d, global step %d).',
                             phase.name, phase_step, global_step)
            should_log = bool(phase.writer) and self._is_every(
                phase_step, phase.batch_size, phase.log_every)
            should_report = self._is_every(phase_step, phase.batch_size, phase.report_every)
            feed = dict(phase.feed)
            feed[self._reset] = is_phase_start
            feed[self._log] = should_log
            feed[self._report] = should_report
            summary, mean_score, global_step, steps_made = sess.run(phase.op, feed)
            global_step, steps_made = int(global_step), int(steps_made)
            if saver and self._is_every(phase_step, phase.batch_size, phase.checkpoint_every):
                self.store_checkpoint(sess, saver)
            if should_report:
                now = time.time()
                steps_per_second = (global_step - report_step) / max(now - report_time, 1e-9)
                report_time, report_step = now, global_step
                logging.info('Step %d, phase %s: mean score %.2f, %.0f env steps/s.',
                             global_step, phase.name, mean_score, steps_per_second)
                yield mean_score
            if summary and phase.writer:
                # Shorter phases are aligned with the longest one, so that their
                # summaries of one cycle appear at the same step in TensorBoard.
                longest_phase = max(each.steps for each in self._phases)
                phase.writer.add_summary(summary, epoch * longest_phase + steps_in)
        for phase in self._phases:
            if phase.writer:
                phase.writer.flush()

    def close(self):
        """Flush and close the summary writers."""
        for phase in self._phases:
            if phase.writer:
                phase.writer.close()

    def _is_every(self, step, batch_size, every):
        """Whether the batch of steps from `step` completes an interval of `every` steps."""
        if not every:
            return False
        covered_steps = range(step, step + batch_size)
        return any((each + 1) % every == 0 for each in covered_steps)

    def _find_current_phase(self, global_step):
        """Return the phase the global step falls into, its epoch and its step within."""
        epoch_size = sum(phase.steps for phase in self._phases)
        epoch = int(global_step // epoch_size)
        steps_in = global_step % epoch_size
        for phase in self._phases:
            if steps_in < phase.steps:
                return phase, epoch, steps_in
            steps_in -= phase.steps
        raise AssertionError('The global step falls outside every phase.')

    def _define_step(self, done, score, summary):
        """Build the phase's operation: run the step, track the mean score, count steps."""
        if done.shape.ndims == 0:
            done, score = done[None], score[None]
        mean_score = streaming_mean.StreamingMean((), tf.float32)
        with tf.control_dependencies([done, score, summary]):
            finished_scores = tf.boolean_mask(score, done)
            submit_score = ordered_cond(
                tf.reduce_any(done), lambda: mean_score.submit(finished_scores), tf.no_op)
        with tf.control_dependencies([submit_score]):
            reported_score = ordered_cond(
                self._report, mean_score.clear, lambda: tf.constant(float('nan')))
            steps_made = tf.shape(score, out_type=self._step.dtype)[0]
            next_step = self._step.assign_add(steps_made)
        with tf.control_dependencies([reported_score, next_step]):
            return tf.identity(summary), reported_score, next_step, steps_made

    def store_checkpoint(self, sess, saver):
        """Store a checkpoint named after the global step in the log directory.

        The saver writes new files before it updates the index of checkpoints,
        so a crash while writing leaves the previous checkpoint usable.
        """
        if not self._logdir:
            return
        os.makedirs(self._logdir, exist_ok=True)
        filename = os.path.join(self._logdir, 'model.ckpt')
        saver.save(sess, filename, int(sess.run(self._step)), write_meta_graph=False)
