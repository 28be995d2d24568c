"""Fuse one step of a batch of environments and an algorithm into one operation."""

import tensorflow as tf

from agents.tools import nested
from agents.tools import streaming_mean
from agents.tools.ordered_cond import ordered_cond


def simulate(batch_env, algo, log=True, reset=False, steps_per_run=None, after_step=None):
    """Build the operation that steps the environments and the algorithm together.

    In order, the operation resets the environments whose episode is done (all
    of them if `reset` is true) and tells the algorithm with `begin_episode`;
    asks the algorithm for actions with `perform`; steps the environments; hands
    the transition to the algorithm with `experience`; and calls `end_episode`
    for the environments whose episode just ended. It keeps the score (sum of
    rewards) and length of the current episode of each environment, and logs the
    mean score and length of finished episodes.

    With `steps_per_run`, the operation makes that many such steps in a
    `tf.while_loop`, so one `session.run` advances the environments and the
    algorithm by several steps, with the same results as that many runs of single steps. `log` and
    `reset` then apply to the first of them.

    Args:
      batch_env: In-graph batch environment (see `InGraphBatchEnv`).
      algo: Algorithm with `begin_episode`, `perform`, `experience` and
        `end_episode` methods, each returning a summary string tensor.
      log: Boolean tensor telling whether to write summaries.
      reset: Boolean tensor forcing a reset of all environments.
      steps_per_run: Int32 scalar tensor, the number of steps the operation
        makes, at least one; one step, with unstacked outputs, if None.
      after_step: Callable building an operation to run after each step and
        before the next, such as advancing a step counter the algorithm reads;
        nothing if None.

    Returns:
      Tuple of the done flags [batch], the scores of the current episodes
      [batch], and a summary string tensor. With `steps_per_run`, the done
      flags and scores after each step, stacked as [steps_per_run, batch], and
      the summary of the first step.
    """
    with tf.name_scope('simulate'):
        log = tf.convert_to_tensor(log, tf.bool)
        reset = tf.convert_to_tensor(reset, tf.bool)
        all_indices = tf.range(len(batch_env))
        with tf.compat.v1.variable_scope('simulate_temporary'):
            score = tf.compat.v1.get_variable(
                'score', initializer=tf.zeros(len(batch_env), tf.float32),
                trainable=False, use_resource=True)
            length = tf.compat.v1.get_variable(
                'length', initializer=tf.zeros(len(batch_env), tf.int32),
                trainable=False, use_resource=True)
            mean_score = streaming_mean.StreamingMean((), tf.float32)
            mean_length = streaming_mean.StreamingMean((), tf.float32)

        def begin_episode(indices):
            with tf.control_dependencies([
                    *nested.flatten(batch_env.reset(indices)),
                    tf.compat.v1.scatter_update(
                        score, indices, tf.zeros_like(indices, tf.float32)),
                    tf.compat.v1.scatter_update(length, indices, tf.zeros_like(indices))]):
                return algo.begin_episode(indices)

        def step():
            observ = nested.map(
                lambda variable: tf.identity(variable.read_value()), batch_env.observ)
            action, perform_summary = algo.perform(all_indices, observ)
            action = tf.ensure_shape(action, batch_env.action.shape)
            with tf.control_dependencies([batch_env.simulate(action)]):
                add_score = score.assign_add(batch_env.reward.read_value())
                add_length = length.assign_add(tf.ones(len(batch_env), tf.int32))
            with tf.control_dependencies([add_score, add_length]):
                experience_summary = algo.experience(
                    all_indices, observ, batch_env.action.read_value(),
                    batch_env.reward.read_value(), batch_env.done.read_value(),
                    nested.map(lambda variable: variable.read_value(), batch_env.observ))
                step_summary = tf.compat.v1.summary.merge([perform_summary, experience_summary])
            return step_summary, tf.group(add_score, add_length)

        def summaries(log):
            def mean_summary(name, mean):
                return ordered_cond(
                    mean.count > 0,
                    lambda: tf.compat.v1.summary.scalar(name, mean.clear()),
                    lambda: tf.constant(''))
            return ordered_cond(log, lambda: tf.compat.v1.summary.merge([
                mean_summary('mean_score', mean_score),
                mean_summary('mean_length', mean_length)]), lambda: tf.constant(''))

        def simulate_step(log, reset):
            begin_indices = _true_indices(batch_env.done.read_value() | reset)
            begin_summary = _call_if_any(begin_episode, begin_indices)
            with tf.control_dependencies([begin_summary]):
                step_summary, stepped = step()
            # Ops below depend on the step's state changes explicitly: the summaries
            # alone need not carry that ordering through the algorithm's branches.
            with tf.control_dependencies([step_summary, stepped]):
                end_indices = _true_indices(batch_env.done)
                end_summary = _call_if_any(algo.end_episode, end_indices)
            with tf.control_dependencies([end_summary]):
                submit_score = mean_score.submit(tf.gather(score, end_indices))
                submit_length = mean_length.submit(
                    tf.cast(tf.gather(length, end_indices), tf.float32))
            with tf.control_dependencies([submit_score, submit_length]):
                summary = tf.compat.v1.summary.merge(
                    [summaries(log), begin_summary, step_summary, end_summary])
            with tf.control_dependencies([summary, stepped, submit_score, submit_length]):
                done = tf.identity(batch_env.done.read_value())
                score_value = tf.identity(score.read_value())
            return done, score_value, summary

        def step_and_after(log, reset):
            outputs = simulate_step(log, reset)
            if after_step is None:
                return outputs
            with tf.control_dependencies(outputs):
                with tf.control_dependencies([after_step()]):
                    return tuple(tf.identity(output) for output in outputs)

        if steps_per_run is None:
            return step_and_after(log, reset)
        return _repeat(step_and_after, steps_per_run, log, reset, len(batch_env))


def _repeat(step_fn, steps_per_run, log, reset, batch_size):
    """Run `step_fn(log, reset)` `steps_per_run` times in a loop, `log` and `reset` the first.

    Every operation of a step waits for the whole previous step, and the
    variables it uses exist outside the loop.

    Returns:
      Tuple of the done flags and scores of each step, stacked as
      [steps_per_run, batch], and the summary of the first step.
    """
    steps_per_run = tf.convert_to_tensor(steps_per_run, tf.int32)

    def body(index, dones, scores, summary):
        with tf.control_dependencies([index]):
            first = tf.equal(index, 0)
            done, score, step_summary = step_fn(log & first, reset & first)
        with tf.control_dependencies([done, score, step_summary]):
            return (
                index + 1, dones.write(index, done), scores.write(index, score),
                tf.where(first, step_summary, summary))

    arrays = (
        tf.TensorArray(tf.bool, steps_per_run, element_shape=[batch_size]),
        tf.TensorArray(tf.float32, steps_per_run, element_shape=[batch_size]))
    _, dones, scores, summary = tf.while_loop(
        lambda index, *_: index < steps_per_run, body, (0,) + arrays + (tf.constant(''),),
        parallel_iterations=1)
    return dones.stack(), scores.stack(), summary


def _true_indices(flags):
    """Indices of the true entries of a boolean vector, as int32."""
    return tf.cast(tf.squeeze(tf.where(flags), 1), tf.int32)


def _call_if_any(function, indices):
    """Call `function(indices)` for a non-empty index vector; return its summary or ''."""
    return ordered_cond(
        tf.size(indices) > 0, lambda: function(indices), lambda: tf.constant(''))
