"""Proximal Policy Optimization with a KL penalty, batched in the graph (BatchPPO).

The algorithm follows Schulman et al. (2017) in the form of the BatchPPO paper
(Hafner, Davidson, Vanhoucke, 2017): observations and rewards are normalized by
running statistics; whole episodes are collected from a batch of environments;
after every `update_every` episodes the policy and value networks are trained
for `update_epochs` passes over the collected episodes, in chunks of
`chunk_length` steps so that recurrent policies train on sequences. The policy
loss is the negated probability ratio times the advantage plus an adaptive
penalty on the KL divergence from the policy that collected the data, plus a
steep cutoff term when the KL divergence grows far beyond its target.

Beyond the original, an episode cut off by a time limit (truncated rather than
terminated) bootstraps its return from the value of its last observation, and
an update step whose loss or gradients are not finite is skipped and reported.
"""

import collections
import functools
import re

import tensorflow as tf

from agents import parts
from agents.algorithms.ppo import utility
from agents import tools
from agents.tools import nested

# One step of an episode as stored in memory: the raw observation and reward,
# the action taken, and the parameters of the policy that chose it.
_Transition = collections.namedtuple('Transition', 'observ, action, policy, reward')

# Scalars each update step reports; their means over an update are summarized.
_UPDATE_METRICS = (
    'value_loss', 'policy_loss', 'entropy', 'kl', 'surrogate_loss', 'kl_penalty', 'kl_cutoff',
    'gradient_norm', 'skipped_updates')


class PPO:
    """BatchPPO: the algorithm interface of `tools.simulate`, learning in the graph."""

    def __init__(self, batch_env, step, is_training, should_log, config):
        """Build the variables and network of the algorithm.

        Args:
          batch_env: In-graph batch environment (`tools.InGraphBatchEnv`).
          step: Integer tensor holding the current training step.
          is_training: Boolean tensor telling whether the algorithm should learn
            (sample actions and collect episodes) or act greedily.
          should_log: Boolean tensor telling whether to write summaries.
          config: Object with attribute access holding the hyperparameters, see
            `agents.scripts.configs.default()`.
        """
        self._batch_env = batch_env
        del step  # Part of the algorithm interface; PPO keeps no step-dependent state.
        self._is_training = is_training
        self._should_log = should_log
        self._config = config
        num_agents = len(batch_env)
        self._observ_filter = parts.StreamingNormalize(
            batch_env.observ[0], center=True, scale=True, clip=5, name='normalize_observ')
        self._reward_filter = parts.StreamingNormalize(
            batch_env.reward[0], center=False, scale=True, clip=10, name='normalize_reward')
        self._network = tf.compat.v1.make_template(
            'network', functools.partial(config.network, config, batch_env.action_space))
        # Running the network once creates its variables and tells the structure
        # of its recurrent state and of its policy parameters.
        output = self._network(
            tf.zeros_like(batch_env.observ)[:, None], tf.ones(num_agents, tf.int32))
        self._policy_type = type(output.policy)
        if config.get('action_bounds') is not None and not hasattr(
                self._policy_type, 'clipped_log_prob'):
            raise ValueError(
                f'action_bounds needs a policy over continuous actions, got '
                f'{self._policy_type.__name__}; set action_bounds=None.')
        with tf.compat.v1.variable_scope('ppo_temporary'):
            template = _Transition(
                batch_env.observ[0], batch_env.action[0],
                nested.map(lambda parameter: parameter[0, 0], output.policy.parameters),
                batch_env.reward[0])
            self._current_episodes = parts.EpisodeMemory(
                template, num_agents, config.max_length, 'episodes')
            self._memory = parts.EpisodeMemory(
                template, config.update_every, config.max_length, 'memory')
            self._memory_index = _variable('memory_index', tf.constant(0, tf.int32))
            self._bootstrap = _variable(
                'bootstrap', tf.zeros([config.update_every], tf.float32))
            self._last_state = nested.map(
                lambda tensor: _variable('last_state', tf.zeros_like(tensor)), output.state)
            self._last_policy = nested.map(
                lambda tensor: _variable('last_policy', tf.zeros_like(tensor[:, 0])),
                output.policy.parameters)
        with tf.compat.v1.variable_scope('ppo'):
            self._penalty = _variable(
                'penalty', tf.constant(float(config.kl_init_penalty), tf.float32))
        self._optimizer = config.optimizer(config.learning_rate)

    def begin_episode(self, agent_indices):
        """Reset the recurrent state and episode buffer of the given agents.

        Args:
          agent_indices: Int32 tensor of the agents starting a new episode.

        Returns:
          Empty summary string tensor.
        """
        with tf.name_scope('begin_episode'):
            reset_state = [
                tf.compat.v1.scatter_update(
                    variable, agent_indices, tf.zeros_like(tf.gather(variable, agent_indices)))
                for variable in nested.flatten(self._last_state)]
            reset_buffer = self._current_episodes.clear(agent_indices)
            with tf.control_dependencies(reset_state + [reset_buffer]):
                return tf.constant('')

    def perform(self, agent_indices, observ):
        """Choose actions: samples of the policy when training, its mode otherwise.

        Args:
          agent_indices: Int32 tensor of the agents to act for.
          observ: Tensor of their current observations.

        Returns:
          Tuple of the actions and a summary string tensor.
        """
        with tf.name_scope('perform'):
            normalized_observ = self._observ_filter.transform(observ)
            state = nested.map(
                lambda variable: tf.gather(variable, agent_indices), self._last_state)
            output = self._network(
                normalized_observ[:, None], tf.ones(tf.shape(observ)[0], tf.int32), state)
            action = tf.where(self._is_training, output.policy.sample(), output.policy.mode())
            log_prob = output.policy.log_prob(action)[:, 0]
            action = action[:, 0]
            remember_state = [
                tf.compat.v1.scatter_update(variable, agent_indices, value)
                for variable, value in zip(
                    nested.flatten(self._last_state), nested.flatten(output.state))]
            remember_policy = [
                tf.compat.v1.scatter_update(variable, agent_indices, value[:, 0])
                for variable, value in zip(
                    nested.flatten(self._last_policy),
                    nested.flatten(output.policy.parameters))]
            summary = self._summary_if_logging(lambda: [
                _histogram('perform/action', action),
                _histogram('perform/log_prob', log_prob)])
            with tf.control_dependencies(remember_state + remember_policy):
                return tf.identity(action), tf.identity(summary)

    def experience(self, agent_indices, observ, action, reward, unused_done, unused_next_observ):
        """Update the normalizers and append the transitions when training.

        Args:
          agent_indices: Int32 tensor of the agents that stepped.
          observ: Observations the actions were chosen from.
          action: Actions applied.
          reward: Rewards received.
          unused_done: Episode ends; episodes are finished in `end_episode`.
          unused_next_observ: Observations after the step; the last one of a
            truncated episode is read from the environment in `end_episode`.

        Returns:
          Summary string tensor.
        """
        with tf.name_scope('experience'):
            return tools.ordered_cond(
                self._is_training,
                lambda: self._define_experience(agent_indices, observ, action, reward),
                lambda: tf.constant(''))

    def end_episode(self, agent_indices):
        """Move finished episodes into memory and train once memory is full.

        Args:
          agent_indices: Int32 tensor of the agents whose episode ended.

        Returns:
          Summary string tensor.
        """
        with tf.name_scope('end_episode'):
            return tools.ordered_cond(
                self._is_training,
                lambda: self._define_end_episode(agent_indices),
                lambda: tf.constant(''))

    def _define_experience(self, agent_indices, observ, action, reward):
        update_filters = [self._observ_filter.update(observ), self._reward_filter.update(reward)]
        with tf.control_dependencies(update_filters):
            policy = nested.map(
                lambda variable: tf.gather(variable, agent_indices), self._last_policy)
            append = self._current_episodes.append(
                _Transition(observ, action, policy, reward), agent_indices)
        with tf.control_dependencies([append]):
            return self._summary_if_logging(lambda: [
                self._observ_filter.summary(),
                self._reward_filter.summary(),
                _scalar('experience/memory_size', self._memory_index),
                _histogram('experience/normalized_observ', self._observ_filter.transform(observ)),
                _scalar('experience/normalized_reward',
                        tf.reduce_mean(self._reward_filter.transform(reward)))])

    def _define_end_episode(self, agent_indices):
        episodes, length = self._current_episodes.data(agent_indices)
        bootstrap = self._final_value(agent_indices)
        space_left = self._config.update_every - self._memory_index
        used = tf.range(tf.minimum(tf.shape(agent_indices)[0], space_left))
        rows = self._memory_index + used
        store_episodes = self._memory.replace(
            nested.map(lambda tensor: tf.gather(tensor, used), episodes),
            tf.gather(length, used), rows)
        store_bootstrap = tf.compat.v1.scatter_update(
            self._bootstrap, rows, tf.gather(bootstrap, used))
        with tf.control_dependencies([store_episodes, store_bootstrap]):
            advance_index = self._memory_index.assign_add(tf.shape(used)[0])
        with tf.control_dependencies([advance_index]):
            return tools.ordered_cond(
                self._memory_index >= self._config.update_every,
                self._training, lambda: tf.constant(''))

    def _final_value(self, agent_indices):
        """Value of the last observation of truncated episodes; zero for terminated ones.

        The environments are reset only at the next step, so their observation
        variable still holds the observation after the last action.
        """
        final_observ = tf.gather(self._batch_env.observ, agent_indices)
        terminated = tf.gather(self._batch_env.terminated, agent_indices)
        state = nested.map(lambda variable: tf.gather(variable, agent_indices), self._last_state)
        value = self._network(
            self._observ_filter.transform(final_observ)[:, None],
            tf.ones(tf.shape(agent_indices)[0], tf.int32), state).value[:, 0]
        return tf.where(terminated, tf.zeros_like(value), value)

    def _training(self):
        """Train on the episodes in memory, adapt the KL penalty, and clear memory."""
        with tf.name_scope('training'):
            (observ, action, policy, reward), length = self._memory.data()
            observ = self._observ_filter.transform(observ)
            reward = self._reward_filter.transform(reward)
            update_summary = self._perform_update_steps(
                observ, action, policy, reward, self._bootstrap.read_value(), length)
            with tf.control_dependencies([update_summary]):
                penalty_summary = self._adjust_penalty(observ, policy, length)
            with tf.control_dependencies([penalty_summary]):
                clear_memory = tf.group(self._memory.clear(), self._memory_index.assign(0))
            with tf.control_dependencies([clear_memory]):
                return tf.compat.v1.summary.merge(
                    [update_summary, penalty_summary] + self._weight_summaries())

    def _perform_update_steps(self, observ, action, policy, reward, bootstrap, length):
        """Compute returns and advantages, then run the update epochs over chunks."""
        config = self._config
        value = self._network(observ, length).value
        return_ = utility.discounted_return(reward, length, config.discount, bootstrap)
        if config.gae_lambda:
            advantage = utility.lambda_advantage(
                reward, value, length, config.discount, config.gae_lambda, bootstrap)
        else:
            advantage = return_ - value
        advantage = _normalize_valid_steps(advantage, length)
        sequences = dict(
            observ=observ, action=action, policy=policy, return_=return_,
            advantage=advantage)
        metrics = parts.iterate_sequences(
            self._update_step, dict.fromkeys(_UPDATE_METRICS, 0.0), sequences, length,
            config.chunk_length, config.batch_size, config.update_epochs, padding_value=1)
        summaries = [
            _scalar(f'training/{name}', tf.reduce_mean(metrics[name]))
            for name in _UPDATE_METRICS]
        summaries.append(_histogram('training/return', _valid_steps(return_, length)))
        summaries.append(_histogram('training/advantage', _valid_steps(advantage, length)))
        return tf.compat.v1.summary.merge(summaries)

    def _update_step(self, batch):
        """One gradient step on a batch of chunks, skipped when not finite.

        Returns:
          Dict of the scalar metrics named in `_UPDATE_METRICS`.
        """
        sequences, length = batch['sequence'], batch['length']
        network = self._network(sequences['observ'], length)
        old_policy = self._policy_type(**sequences['policy'])
        value_loss = self._value_loss(network.value, sequences['return_'], length)
        policy_loss, policy_metrics = self._policy_loss(
            old_policy, network.policy, sequences['action'], sequences['advantage'], length)
        loss = value_loss + policy_loss
        gradients, variables = zip(*self._optimizer.compute_gradients(loss))
        gradient_norm = tf.linalg.global_norm(gradients)
        is_finite = tf.math.is_finite(loss) & tf.math.is_finite(gradient_norm)
        optimize = tools.ordered_cond(
            is_finite,
            lambda: self._optimizer.apply_gradients(zip(gradients, variables)),
            lambda: _report_skipped_update(loss, gradient_norm))
        metrics = dict(
            policy_metrics, value_loss=value_loss, policy_loss=policy_loss,
            gradient_norm=gradient_norm, skipped_updates=1.0 - tf.cast(is_finite, tf.float32))
        with tf.control_dependencies([optimize]):
            return {name: tf.identity(metrics[name]) for name in _UPDATE_METRICS}

    def _value_loss(self, value, return_, length):
        """Half the squared error of the value against the return, per valid step."""
        with tf.name_scope('value_loss'):
            return tf.reduce_mean(0.5 * _mean_over_time(tf.square(return_ - value), length))

    def _policy_loss(self, old_policy, policy, action, advantage, length):
        """Surrogate objective with the adaptive KL penalty and the KL cutoff.

        Returns:
          Tuple of the loss and a dict of its parts for summaries.
        """
        config = self._config
        with tf.name_scope('policy_loss'):
            kl = _mean_over_time(old_policy.kl(policy), length)
            ratio = tf.exp(self._log_prob(policy, action) - self._log_prob(old_policy, action))
            surrogate_loss = -_mean_over_time(ratio * tf.stop_gradient(advantage), length)
            kl_penalty = self._penalty * kl
            cutoff_threshold = config.kl_target * config.kl_cutoff_factor
            kl_cutoff = config.kl_cutoff_coef * tf.square(tf.nn.relu(kl - cutoff_threshold))
            policy_loss = tf.reduce_mean(surrogate_loss + kl_penalty + kl_cutoff)
            metrics = dict(
                entropy=tf.reduce_mean(_mean_over_time(policy.entropy(), length)),
                kl=tf.reduce_mean(kl), surrogate_loss=tf.reduce_mean(surrogate_loss),
                kl_penalty=tf.reduce_mean(kl_penalty), kl_cutoff=tf.reduce_mean(kl_cutoff))
            return policy_loss, metrics

    def _log_prob(self, policy, action):
        """Log probability of the actions as the environments executed them.

        With `action_bounds`, the environments clip actions to these bounds, and
        the policy's probabilities account for it.
        """
        bounds = self._config.get('action_bounds')
        if bounds is None:
            return policy.log_prob(action)
        return policy.clipped_log_prob(action, *bounds)

    def _adjust_penalty(self, observ, old_policy_parameters, length):
        """Scale the KL penalty to keep the policy change near `kl_target`."""
        config = self._config
        with tf.name_scope('adjust_penalty'):
            policy = self._network(observ, length).policy
            old_policy = self._policy_type(**old_policy_parameters)
            kl_change = tf.reduce_mean(_mean_over_time(old_policy.kl(policy), length))
            factor = tf.where(
                kl_change > 1.3 * config.kl_target, 1.5,
                tf.where(kl_change < 0.7 * config.kl_target, 1 / 1.5, 1.0))
            adjust = self._penalty.assign(self._penalty * factor)
            with tf.control_dependencies([adjust]):
                return tf.compat.v1.summary.merge([
                    _scalar('training/kl_change', kl_change),
                    _scalar('training/penalty', self._penalty.read_value())])

    def _weight_summaries(self):
        """Histograms of the trainable weights, grouped by the configured regexes."""
        summaries = []
        variables = tf.compat.v1.trainable_variables()
        for group, pattern in self._config.weight_summaries.items():
            for variable in [each for each in variables if re.match(pattern, each.name)]:
                name = variable.name.split(':')[0]
                summaries.append(_histogram(f'weights_{group}/{name}', variable))
        return summaries

    def _summary_if_logging(self, build_summaries):
        """Merge the summaries `build_summaries()` creates when logging, else ''."""
        return tools.ordered_cond(
            self._should_log,
            lambda: tf.compat.v1.summary.merge(build_summaries() or [tf.constant('')]),
            lambda: tf.constant(''))


def _scalar(tag, value):
    """Scalar summary with exactly this tag, also inside conditionals and loops."""
    return tf.raw_ops.ScalarSummary(tags=tag, values=tf.cast(value, tf.float32))


def _histogram(tag, values):
    """Histogram summary with exactly this tag, also inside conditionals and loops."""
    return tf.raw_ops.HistogramSummary(tag=tag, values=tf.cast(values, tf.float32))


def _valid_steps(tensor, length):
    """The entries of a [batch, time] tensor at the valid steps of each sequence."""
    return tf.boolean_mask(tensor, tf.sequence_mask(length, tf.shape(tensor)[1]))


def _variable(name, initial_value):
    """A non-trainable variable for algorithm state; its name is made unique."""
    return tf.Variable(initial_value, trainable=False, name=name)


def _mean_over_time(tensor, length):
    """Mean over the valid time steps of each sequence of a [batch, time] tensor."""
    total = tf.reduce_sum(utility.mask(tensor, length), 1)
    return total / tf.cast(tf.maximum(length, 1), total.dtype)


def _normalize_valid_steps(tensor, length):
    """Shift and scale a [batch, time] tensor to zero mean, unit variance over valid steps."""
    valid = tf.sequence_mask(length, tf.shape(tensor)[1], tensor.dtype)
    count = tf.maximum(tf.reduce_sum(valid), 1.0)
    mean = tf.reduce_sum(tensor * valid) / count
    variance = tf.reduce_sum(tf.square(tensor - mean) * valid) / count
    return utility.mask((tensor - mean) / (tf.sqrt(variance) + 1e-8), length)


def _report_skipped_update(loss, gradient_norm):
    """Print why an update step is skipped; the op the skipped branch runs."""
    return tf.print(
        'PPO skipped an update step: the loss or gradients are not finite (loss', loss,
        ', gradient norm', gradient_norm, '). Check the rewards and observations for '
        'extreme values.', output_stream=tf.compat.v1.logging.error)
