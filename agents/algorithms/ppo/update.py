"""The update of PPO: epochs of gradient steps on collected sequences, then the KL penalty.

`PPO` collects experience and computes the value targets and advantages; an
`Update` trains the network on them: `update_epochs` passes in shuffled
batches (`parts.iterate_sequences`), each step minimizing the policy loss
(the KL penalty or the clipped ratio, see `losses`) plus the value loss, with
gradients clipped by their global norm and the step skipped and reported when
its loss or gradients are not finite. After the epochs, the KL penalty's
coefficient adapts to keep the policy change near `kl_target`, within
`kl_penalty_bounds`.
"""

import functools
import re

import tensorflow as tf

from agents import parts
from agents import tools
from agents.algorithms.ppo import advantages
from agents.algorithms.ppo import losses
from agents.algorithms.ppo import schedule
from agents.algorithms.ppo import summaries
from agents.tools import nested

# Scalars each update step reports; their means over an update are summarized.
UPDATE_METRICS = (
    'value_loss', 'policy_loss', 'entropy', 'kl', 'surrogate_loss', 'kl_penalty', 'kl_cutoff',
    'clip_fraction', 'gradient_norm', 'skipped_updates')


class Update:
    """Trains PPO's network on sequences of collected experience.

    Attributes:
      penalty: Variable `ppo/penalty`, the KL penalty's coefficient, which
        checkpoints keep.

    Args:
      config: The configuration of PPO (`config.PPOConfig` keys).
      network: The network's template, called on `[batch, time]` sequences.
      policy_type: Class of the network's policy distribution, rebuilt from
        stored parameters as the policy that acted.
      step: Integer tensor counting the environment steps trained on; the
        learning rate's schedule follows it.
    """

    def __init__(self, config, network, policy_type, step):
        self._config = config
        self._network = network
        self._policy_type = policy_type
        self._step = step
        self._is_recurrent = bool(getattr(config.network, 'is_recurrent', False))
        with tf.compat.v1.variable_scope('ppo'):
            self.penalty = tf.Variable(
                tf.constant(float(config.kl_init_penalty), tf.float32), trainable=False,
                name='penalty')

    def train(self, sequences, value, return_, advantage, length):
        """Run the update epochs, then adapt the KL penalty.

        Args:
          sequences: Dict of `[batch, time, ...]` tensors: `observ`, normalized
            observations; `action`, the actions taken; `policy`, the parameters
            of the policy that took them; `state`, its recurrent state before
            each step; and with rollouts `reset`, the steps that begin episodes.
          value: Value estimates before the update.
          return_: Value targets.
          advantage: Advantages, normalized here over the valid steps.
          length: Int32 `[batch]`, the valid steps of each sequence.

        Returns:
          Summary string tensor.
        """
        config = self._config
        sequences = nested.map(tf.stop_gradient, dict(
            sequences, value=value, return_=return_,
            advantage=advantages.normalize_valid_steps(advantage, length)))
        if self._is_recurrent:
            chunk_length, batch_size = config.chunk_length, config.batch_size
        else:
            sequences = {
                name: tensor for name, tensor in sequences.items()
                if name not in ('state', 'reset')}
            sequences = nested.map(
                lambda tensor: advantages.valid_steps(tensor, length)[:, None], sequences)
            length = tf.ones(tf.shape(sequences['return_'])[:1], tf.int32)
            chunk_length, batch_size = None, config.minibatch_size
        # Built here, so the schedule follows the step that trains, also when
        # one run of the graph makes several steps.
        learning_rate = schedule.scheduled(
            'learning_rate', config.learning_rate, config.learning_rate_schedule,
            config.final_learning_rate, self._step, config.steps)
        with tf.name_scope('clip_ratio'):
            clip_ratio = tf.constant(float(config.clip_ratio))
        optimizer = config.optimizer(learning_rate)
        metrics = parts.iterate_sequences(
            functools.partial(self._update_step, optimizer, clip_ratio),
            dict.fromkeys(UPDATE_METRICS, 0.0),
            sequences, length, chunk_length, batch_size, config.update_epochs,
            padding_value=1, jit_compile=config.gradient_graph == 'xla_update')
        report = summaries.report_skipped_updates(metrics)
        valid_steps = functools.partial(advantages.valid_steps, length=length)
        written = [
            summaries.scalar(f'training/{name}', mean)
            for name, mean in summaries.means(metrics).items()]
        written += [
            summaries.scalar('training/learning_rate', learning_rate),
            summaries.scalar('training/clip_ratio', clip_ratio),
            summaries.scalar('training/update_steps', tf.shape(metrics['value_loss'])[0]),
            summaries.histogram('training/return', valid_steps(sequences['return_'])),
            summaries.histogram('training/advantage', valid_steps(sequences['advantage']))]
        with tf.control_dependencies([*nested.flatten(metrics), report]):
            penalty_summary = self._adjust_penalty(sequences, length)
        return tf.compat.v1.summary.merge(
            written + [penalty_summary] + self._weight_summaries())

    def _update_step(self, optimizer, clip_ratio, batch):
        """One gradient step on a batch of sequences, skipped when not finite.

        Args:
          optimizer: Optimizer of every trainable variable of the network.
          clip_ratio: Scalar tensor, the clip ratio of the objective.
          batch: Batch of sequences from `parts.iterate_sequences`.

        Returns:
          Dict of the scalar metrics named in `UPDATE_METRICS`.
        """
        config = self._config
        variables = self._network.trainable_variables
        loss_and_gradients = functools.partial(
            self._loss_and_gradients, optimizer, variables, clip_ratio)
        if config.gradient_graph in ('function', 'xla'):
            # A function call of its own gets TensorFlow's oneDNN kernels, which the
            # bodies of the training loop and its conditionals do not (see
            # benchmarks/update_step.py). The scripts' sessions keep Grappler from
            # inlining the call again.
            loss_and_gradients = tf.function(
                loss_and_gradients, autograph=False,
                jit_compile=config.gradient_graph == 'xla')
        loss, gradients, metrics = loss_and_gradients(batch)
        gradient_norm = metrics['gradient_norm']
        is_finite = tf.math.is_finite(loss) & tf.math.is_finite(gradient_norm)
        optimize = tools.ordered_cond(
            is_finite, lambda: tf.group(optimizer.apply_gradients(
                list(zip(gradients, variables)))), tf.no_op)
        metrics['skipped_updates'] = 1.0 - tf.cast(is_finite, tf.float32)
        with tf.control_dependencies([optimize]):
            return {name: tf.identity(metrics[name]) for name in UPDATE_METRICS}

    def _loss_and_gradients(self, optimizer, variables, clip_ratio, batch):
        """The loss of a batch of sequences and its gradients, clipped by global norm.

        Returns:
          Tuple of the scalar loss, the gradients of `variables`, and a dict of
          the metrics named in `UPDATE_METRICS` but `skipped_updates`.
        """
        config = self._config
        sequences = batch['sequence']
        # Feed-forward updates train on single valid steps, which need no masks.
        length = batch['length'] if self._is_recurrent else None
        network = self._replay(sequences, length)
        old_policy = self._policy_type(**sequences['policy'])
        action = sequences['action']
        policy_loss, policy_metrics = losses.policy_loss(
            config, old_policy, network.policy, self._log_prob(network.policy, action),
            self._log_prob(old_policy, action), sequences['advantage'], length, self.penalty,
            clip_ratio)
        value_loss = losses.value_loss(
            config, network.value, sequences['value'], sequences['return_'], length)
        loss = value_loss + policy_loss
        gradients = [gradient for gradient, _ in optimizer.compute_gradients(loss, variables)]
        gradient_norm = tf.linalg.global_norm(gradients)
        if config.max_gradient_norm:
            gradients, _ = tf.clip_by_global_norm(
                gradients, config.max_gradient_norm, use_norm=gradient_norm)
        metrics = dict(
            policy_metrics, value_loss=value_loss, policy_loss=policy_loss,
            gradient_norm=gradient_norm)
        return loss, gradients, metrics

    def _log_prob(self, policy, action):
        """Log probability of the actions as the environments executed them.

        With `action_bounds`, the environments clip actions to these bounds, and
        the policy's probabilities account for it.
        """
        bounds = self._config.action_bounds
        if bounds is None:
            return policy.log_prob(action)
        return policy.clipped_log_prob(action, *bounds)

    def _replay(self, sequences, length):
        """The network over stored sequences.

        Recurrent networks start from the state that acted at each sequence's
        first step and restart from zeros where an episode begins.
        """
        if not self._is_recurrent:
            return self._network(sequences['observ'], length)
        initial_state = nested.map(lambda state: state[:, 0], sequences['state'])
        if 'reset' not in sequences:
            return self._network(sequences['observ'], length, initial_state)
        return self._network(sequences['observ'], length, initial_state, sequences['reset'])

    def _adjust_penalty(self, sequences, length):
        """Scale the KL penalty to keep the policy change near `kl_target`.

        The coefficient stays within `kl_penalty_bounds`, so a long run of
        small or large changes cannot drive it to zero or infinity.
        """
        config = self._config
        with tf.name_scope('adjust_penalty'):
            policy = self._replay(sequences, length).policy
            old_policy = self._policy_type(**sequences['policy'])
            kl_change = tf.reduce_mean(losses.mean_over_time(old_policy.kl(policy), length))
            factor = tf.where(
                kl_change > 1.3 * config.kl_target, 1.5,
                tf.where(kl_change < 0.7 * config.kl_target, 1 / 1.5, 1.0))
            if config.objective == 'kl_penalty':
                lower, upper = config.kl_penalty_bounds
                adjust = self.penalty.assign(
                    tf.clip_by_value(self.penalty * factor, lower, upper))
            else:
                adjust = tf.no_op()
            with tf.control_dependencies([adjust]):
                return tf.compat.v1.summary.merge([
                    summaries.scalar('training/kl_change', kl_change),
                    summaries.scalar('training/penalty', self.penalty.read_value())])

    def _weight_summaries(self):
        """Histograms of the trainable weights, grouped by the configured regexes."""
        histograms = []
        variables = tf.compat.v1.trainable_variables()
        for group, pattern in self._config.weight_summaries.items():
            for variable in [each for each in variables if re.match(pattern, each.name)]:
                name = variable.name.split(':')[0]
                histograms.append(summaries.histogram(f'weights_{group}/{name}', variable))
        return histograms
