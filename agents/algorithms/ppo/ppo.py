"""Proximal Policy Optimization, batched in the graph (BatchPPO).

The algorithm follows Schulman et al. (2017) in the form of the BatchPPO paper
(Hafner, Davidson, Vanhoucke, 2017): observations and rewards are normalized by
running statistics kept in the graph, a batch of environments collects
experience, and the policy and value networks train for `update_epochs`
passes over it, all inside the operation that steps the environments.

Experience is collected in one of two ways:
- whole episodes (BatchPPO's way, `rollout_length=None`): after every
  `update_every` finished episodes the networks train on them;
- rollouts (`rollout_length=T`): after every T steps of each environment the
  networks train on those steps, whatever episodes they belong to; the value
  of the observation after a rollout's last step, or after a time limit cut an
  episode, stands for the rewards that were not seen.

Feed-forward networks train on shuffled minibatches of `minibatch_size` real
steps, so an update costs in proportion to the steps collected, not to the
padding of the episode buffers; they replay raw observations normalized with
the statistics of update time, as BatchPPO did, or the normalized ones they
acted on (`stored_observ`). Recurrent networks train on chunks of
`chunk_length` steps of the episodes or rollouts, `batch_size` chunks at a
time, so they see sequences. Each chunk is replayed from the recurrent state
that acted at its first step, on the normalized observations the policy saw,
and the state restarts from zeros where an episode begins inside it: the
first update step starts from exactly the policy that acted.

The policy objective is BatchPPO's adaptive KL penalty with its quadratic
cutoff, or the clipped surrogate objective (`objective`, see `losses`). Beyond
the original, the KL penalty coefficient stays within `kl_penalty_bounds`;
gradients are clipped by their global norm; the learning rate and the clip
ratio may decay linearly over the training steps (`schedule`); an episode
cut off by a time limit bootstraps from the value of its last observation;
an update may end early once the policy has moved further than `kl_stop`;
and an update step whose loss or gradients are not finite is skipped and
reported.
"""

import collections
import functools
import re

import tensorflow as tf

from agents import parts
from agents import tools
from agents.algorithms.ppo import losses
from agents.algorithms.ppo import schedule
from agents.algorithms.ppo import summaries
from agents.algorithms.ppo import utility
from agents.tools import nested

# One step of an episode as stored in memory: the observation (raw, or as the
# policy saw it for recurrent networks) and the raw reward, the action taken,
# and the parameters and recurrent state of the policy that chose it.
_Transition = collections.namedtuple('Transition', 'observ, action, policy, state, reward')

# One step of a rollout; it also keeps the observation and recurrent state
# after the step and how the episode ended, since episodes begin and end inside
# a rollout.
_RolloutStep = collections.namedtuple(
    'RolloutStep',
    'observ, action, policy, state, reward, next_observ, next_state, terminated, done')

# Scalars each update step reports; their means over an update are summarized.
_UPDATE_METRICS = (
    'value_loss', 'policy_loss', 'entropy', 'kl', 'surrogate_loss', 'kl_penalty', 'kl_cutoff',
    'clip_fraction', 'gradient_norm', 'skipped_updates')


class _Optimizer:
    """An optimizer, its learning rate, and which of the network's variables it trains.

    Args:
      optimizer: Optimizer built with `learning_rate`.
      learning_rate: Scalar tensor, the optimizer's current step size.
      indices: Positions of its variables in the network's trainable variables.
    """

    def __init__(self, optimizer, learning_rate, indices):
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.indices = list(indices)

    def apply(self, gradients, variables):
        """The op that applies the gradients of its variables, from those of all."""
        return self.optimizer.apply_gradients(
            [(gradients[index], variables[index]) for index in self.indices])


class Policy:
    """The acting part of PPO: its observation normalizer and its network.

    PPO acts through it, and so does the export of a trained policy
    (`agents.scripts.serving`): built at the top of a graph, its variables
    have the names under which PPO's checkpoints store them.

    Args:
      config: The configuration; its `network` is called with it.
      action_space: Action space the network acts in.
      observ_template: Tensor of the shape of one observation.
    """

    def __init__(self, config, action_space, observ_template):
        self.observ_filter = parts.StreamingNormalize(
            observ_template, center=True, scale=True, clip=config.observ_clip or 0,
            name='normalize_observ')
        self.network = tf.compat.v1.make_template(
            'network', functools.partial(config.network, config, action_space))

    def step(self, observ, state=None):
        """The network's output on one step of a batch of observations.

        Args:
          observ: Tensor `[batch, ...]` of observations, not normalized.
          state: The network's state before the step; zeros if None.

        Returns:
          `NetworkOutput` whose policy and value have the shape `[batch, 1]`.
        """
        normalized = self.observ_filter.transform(observ)
        return self.network(normalized[:, None], tf.ones(tf.shape(observ)[0], tf.int32), state)


class PPO:
    """BatchPPO: the algorithm interface of `tools.simulate`, learning in the graph."""

    def __init__(self, batch_env, step, is_training, should_log, config):
        """Build the variables and network of the algorithm.

        Args:
          batch_env: In-graph batch environment (`tools.InGraphBatchEnv`).
          step: Integer tensor counting the environment steps trained on; the
            learning rate schedule follows it.
          is_training: Boolean tensor telling whether the algorithm should learn
            (sample actions and collect experience) or act greedily.
          should_log: Boolean tensor telling whether to write summaries.
          config: Object with attribute access holding the hyperparameters, see
            `agents.scripts.configs.default()`.

        Raises:
          ValueError: If `action_bounds` is set for a policy over discrete actions.
        """
        self._batch_env = batch_env
        self._step = step
        self._is_training = is_training
        self._should_log = should_log
        self._config = config
        num_agents = len(batch_env)
        self._is_recurrent = bool(getattr(config.network, 'is_recurrent', False))
        self._update_metrics = _UPDATE_METRICS + (('kl_stopped',) if config.kl_stop else ())
        self._stores_normalized = self._is_recurrent or config.stored_observ == 'normalized'
        self._policy = Policy(config, batch_env.action_space, batch_env.observ[0])
        self._observ_filter = self._policy.observ_filter
        scale_rewards = config.reward_normalization != 'none'
        self._reward_filter = parts.StreamingNormalize(
            batch_env.reward[0], center=False, scale=scale_rewards,
            clip=(config.reward_clip or 0) if scale_rewards else 0, name='normalize_reward')
        self._network = self._policy.network
        # Running the network once creates its variables and tells the structure
        # of its recurrent state and of its policy parameters.
        output = self._network(
            tf.zeros_like(batch_env.observ)[:, None], tf.ones(num_agents, tf.int32))
        self._policy_type = type(output.policy)
        if config.action_bounds is not None and not hasattr(
                self._policy_type, 'clipped_log_prob'):
            raise ValueError(
                f'action_bounds needs a policy over continuous actions, got '
                f'{self._policy_type.__name__}; set action_bounds=None.')
        policy_template = nested.map(
            lambda parameter: parameter[0, 0], output.policy.parameters)
        state_template = nested.map(lambda tensor: tensor[0], output.state)
        observ_template = tf.cast(batch_env.observ[0], self._stored_observ_dtype())
        with tf.compat.v1.variable_scope('ppo_temporary'):
            if config.rollout_length:
                self._rollout = parts.EpisodeMemory(
                    _RolloutStep(
                        observ_template, batch_env.action[0], policy_template, state_template,
                        batch_env.reward[0], observ_template, state_template,
                        batch_env.done[0], batch_env.done[0]),
                    num_agents, config.rollout_length, 'rollout')
            else:
                template = _Transition(
                    observ_template, batch_env.action[0], policy_template, state_template,
                    batch_env.reward[0])
                self._current_episodes = parts.EpisodeMemory(
                    template, num_agents, config.max_length, 'episodes')
                self._memory = parts.EpisodeMemory(
                    template, config.update_every, config.max_length, 'memory')
                self._memory_index = _variable('memory_index', tf.constant(0, tf.int32))
                self._bootstrap = _variable(
                    'bootstrap', tf.zeros([config.update_every], tf.float32))
            self._running_return = _variable('running_return', tf.zeros([num_agents]))
            self._last_state = nested.map(
                lambda tensor: _variable('last_state', tf.zeros_like(tensor)), output.state)
            # The state each agent's last action was chosen from.
            self._acting_state = nested.map(
                lambda tensor: _variable('acting_state', tf.zeros_like(tensor)), output.state)
            self._last_policy = nested.map(
                lambda tensor: _variable('last_policy', tf.zeros_like(tensor[:, 0])),
                output.policy.parameters)
            # The summary of the last update until a step that logs writes it.
            self._pending_summary = _variable('pending_summary', tf.constant(''))
            if config.kl_stop:
                # Whether the current update has stopped on the KL divergence.
                self._kl_stopped = _variable('kl_stopped', tf.constant(False))
        with tf.compat.v1.variable_scope('ppo'):
            self._penalty = _variable(
                'penalty', tf.constant(float(config.kl_init_penalty), tf.float32))

    def begin_episode(self, agent_indices):
        """Reset the recurrent state and episode buffer of the given agents.

        Args:
          agent_indices: Int32 tensor of the agents starting a new episode.

        Returns:
          Empty summary string tensor.
        """
        with tf.name_scope('begin_episode'):
            resets = [
                tf.compat.v1.scatter_update(
                    variable, agent_indices, tf.zeros_like(tf.gather(variable, agent_indices)))
                for variable in nested.flatten(self._last_state)]
            if not self._config.rollout_length:
                resets.append(self._current_episodes.clear(agent_indices))
            with tf.control_dependencies(resets):
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
            state = nested.map(
                lambda variable: tf.gather(variable, agent_indices), self._last_state)
            output = self._policy.step(observ, state)
            action = tf.where(self._is_training, output.policy.sample(), output.policy.mode())
            log_prob = output.policy.log_prob(action)[:, 0]
            action = action[:, 0]
            remember_state = [
                tf.compat.v1.scatter_update(variable, agent_indices, value)
                for variable, value in zip(
                    nested.flatten(self._last_state) + nested.flatten(self._acting_state),
                    nested.flatten(output.state) + nested.flatten(state))]
            remember_policy = [
                tf.compat.v1.scatter_update(variable, agent_indices, value[:, 0])
                for variable, value in zip(
                    nested.flatten(self._last_policy),
                    nested.flatten(output.policy.parameters))]
            summary = self._summary_if_logging(lambda: [
                summaries.histogram('perform/action', action),
                summaries.histogram('perform/log_prob', log_prob)])
            with tf.control_dependencies(remember_state + remember_policy):
                return tf.identity(action), tf.identity(summary)

    def experience(self, agent_indices, observ, action, reward, done, next_observ):
        """Update the normalizers and store the transitions when training.

        With rollouts, the networks train here once every environment has made
        `rollout_length` steps.

        Args:
          agent_indices: Int32 tensor of the agents that stepped.
          observ: Observations the actions were chosen from.
          action: Actions applied.
          reward: Rewards received.
          done: Whether each episode ended with this step.
          next_observ: Observations after the step; for an episode that ended,
            its last observation (the environments reset at the next step).

        Returns:
          Summary string tensor.
        """
        with tf.name_scope('experience'):
            # Collecting rollouts trains in this branch; as a function call, the
            # steps that do not train skip the bookkeeping of its many inputs.
            return tools.ordered_cond(
                self._is_training,
                lambda: self._define_experience(
                    agent_indices, observ, action, reward, done, next_observ),
                lambda: tf.constant(''), as_function=bool(self._config.rollout_length))

    def end_episode(self, agent_indices):
        """Move finished episodes into memory and train once memory is full.

        Args:
          agent_indices: Int32 tensor of the agents whose episode ended.

        Returns:
          Summary string tensor.
        """
        with tf.name_scope('end_episode'):
            if self._config.rollout_length:
                return tf.constant('')  # Rollouts keep their episodes in place.
            return tools.ordered_cond(
                self._is_training,
                lambda: self._define_end_episode(agent_indices),
                lambda: tf.constant(''))

    def _define_experience(self, agent_indices, observ, action, reward, done, next_observ):
        # Read before the filters change, so the stored observations are those
        # the policy saw; whole episodes keep no observation after a step.
        rollouts = bool(self._config.rollout_length)
        stored = self._stored_observ(*((observ, next_observ) if rollouts else (observ,)))
        stored_observ, stored_next_observ = stored[0], stored[-1]
        with tf.control_dependencies(list(stored)):
            update_filters = [
                self._observ_filter.update(observ),
                self._update_reward_filter(agent_indices, reward, done)]
        with tf.control_dependencies(update_filters):
            policy, state, next_state = nested.map(
                lambda variable: tf.gather(variable, agent_indices),
                (self._last_policy, self._acting_state, self._last_state))
            if self._config.rollout_length:
                terminated = tf.gather(self._batch_env.terminated, agent_indices)
                append = self._rollout.append(
                    _RolloutStep(
                        stored_observ, action, policy, state, reward, stored_next_observ,
                        next_state, terminated, done),
                    agent_indices)
            else:
                append = self._current_episodes.append(
                    _Transition(stored_observ, action, policy, state, reward), agent_indices)
        with tf.control_dependencies([append]):
            training_summary = tf.constant('')
            if self._config.rollout_length:
                is_full = tf.reduce_min(self._rollout.length()) >= self._config.rollout_length
                training_summary = tools.ordered_cond(
                    is_full, lambda: self._keep_for_logging(self._train_on_rollout()),
                    lambda: tf.constant(''), as_function=True)
        with tf.control_dependencies([training_summary]):
            return tf.compat.v1.summary.merge([training_summary, self._summary_if_logging(
                lambda: [
                    self._take_pending_summary(),
                    self._observ_filter.summary(),
                    self._reward_filter.summary(),
                    summaries.histogram(
                        'experience/normalized_observ', self._observ_filter.transform(observ)),
                    summaries.scalar(
                        'experience/normalized_reward',
                        tf.reduce_mean(self._reward_filter.transform(reward)))])])

    def _stored_observ_dtype(self):
        return tf.float32 if self._stores_normalized else self._batch_env.observ.dtype

    def _stored_observ(self, *observs):
        """The observations as memory keeps them (`stored_observ`).

        Normalized as the policy saw them, the update starts from exactly the
        policy that acted; a recurrent policy's actions depend on every
        observation of its sequence, so it always keeps these. Raw ones are
        normalized when they train, with the statistics of that time.
        """
        if not self._stores_normalized:
            return observs
        return tuple(self._observ_filter.transform(observ) for observ in observs)

    def _network_input(self, stored_observ):
        """Normalized observations from what memory keeps (see `_stored_observ`)."""
        if self._stores_normalized:
            return stored_observ
        return self._observ_filter.transform(stored_observ)

    def _update_reward_filter(self, agent_indices, reward, done):
        """Merge the rewards, or the discounted returns so far, into the reward scale.

        Scaling by the spread of returns rather than of single rewards keeps
        the value targets near unit scale whatever the discount.
        """
        if self._config.reward_normalization != 'return':
            return self._reward_filter.update(reward)
        returns = tf.gather(self._running_return, agent_indices) * self._config.discount
        returns += reward
        update = self._reward_filter.update(returns)
        with tf.control_dependencies([update]):
            returns = tf.where(done, tf.zeros_like(returns), returns)
            return tf.compat.v1.scatter_update(self._running_return, agent_indices, returns)

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
                lambda: self._keep_for_logging(self._train_on_episodes()),
                lambda: tf.constant(''))

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

    def _train_on_episodes(self):
        """Train on the whole episodes in memory, then clear it."""
        config = self._config
        with tf.name_scope('training'):
            episodes, length = self._memory.data()
            sequences = dict(
                observ=self._network_input(episodes.observ), action=episodes.action,
                policy=episodes.policy, state=episodes.state)
            reward = self._reward_filter.transform(episodes.reward)
            bootstrap = self._bootstrap.read_value()
            value = self._values(sequences['observ'], episodes.state, length)
            if config.gae_lambda:
                advantage = utility.lambda_advantage(
                    reward, value, length, config.discount, config.gae_lambda, bootstrap)
                return_ = advantage + utility.mask(value, length)
            else:
                return_ = utility.discounted_return(reward, length, config.discount, bootstrap)
                advantage = return_ - value
            summary = self._train(sequences, value, return_, advantage, length)
            with tf.control_dependencies([summary]):
                clear_memory = tf.group(self._memory.clear(), self._memory_index.assign(0))
            with tf.control_dependencies([clear_memory]):
                return tf.identity(summary)

    def _train_on_rollout(self):
        """Train on the steps of the full rollout, then clear it."""
        config = self._config
        with tf.name_scope('training'):
            steps, length = self._rollout.data()
            sequences = dict(
                observ=self._network_input(steps.observ), action=steps.action,
                policy=steps.policy, state=steps.state,
                reset=tf.concat([tf.zeros_like(steps.done[:, :1]), steps.done[:, :-1]], 1))
            reward = self._reward_filter.transform(steps.reward)
            value = self._values(sequences['observ'], steps.state, length)
            next_value = self._values(
                self._network_input(steps.next_observ), steps.next_state, length)
            advantage = utility.rollout_advantage(
                reward, value, next_value, steps.terminated, steps.done, config.discount,
                config.gae_lambda)
            return_ = advantage + value
            summary = self._train(sequences, value, return_, advantage, length)
            with tf.control_dependencies([summary]):
                clear_rollout = self._rollout.clear()
            with tf.control_dependencies([clear_rollout]):
                return tf.identity(summary)

    def _train(self, sequences, value, return_, advantage, length):
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
            advantage=utility.normalize_valid_steps(advantage, length)))
        if self._is_recurrent:
            chunk_length, batch_size = config.chunk_length, config.batch_size
        else:
            sequences = {
                name: tensor for name, tensor in sequences.items()
                if name not in ('state', 'reset')}
            sequences = nested.map(
                lambda tensor: utility.valid_steps(tensor, length)[:, None], sequences)
            length = tf.ones(tf.shape(sequences['return_'])[:1], tf.int32)
            chunk_length, batch_size = None, config.minibatch_size
        # Built here, so the schedules follow the step that trains, also when
        # one run of the graph makes several steps.
        learning_rate = schedule.scheduled(
            'learning_rate', config.learning_rate, config.learning_rate_schedule,
            config.final_learning_rate, self._step, config.steps)
        clip_ratio = schedule.scheduled(
            'clip_ratio', config.clip_ratio, config.clip_ratio_schedule,
            config.final_clip_ratio, self._step, config.steps)
        optimizers = self._define_optimizers(learning_rate)
        begin = [self._kl_stopped.assign(False)] if config.kl_stop else []
        with tf.control_dependencies(begin):
            metrics = parts.iterate_sequences(
                functools.partial(self._update_step, optimizers, clip_ratio),
                dict.fromkeys(self._update_metrics, 0.0),
                sequences, length, chunk_length, batch_size, config.update_epochs,
                padding_value=1, jit_compile=config.gradient_graph == 'xla_update')
        report = summaries.report_skipped_updates(metrics)
        valid_steps = functools.partial(utility.valid_steps, length=length)
        written = [
            summaries.scalar(f'training/{name}', mean)
            for name, mean in summaries.means_over_computed_steps(metrics).items()]
        written += [
            *[summaries.scalar(f'training/{name}', optimizer.learning_rate)
              for name, optimizer in optimizers.items()],
            summaries.scalar('training/clip_ratio', clip_ratio),
            summaries.scalar('training/update_steps', tf.shape(metrics['value_loss'])[0]),
            summaries.histogram('training/return', valid_steps(sequences['return_'])),
            summaries.histogram('training/advantage', valid_steps(sequences['advantage']))]
        with tf.control_dependencies([*nested.flatten(metrics), report]):
            penalty_summary = self._adjust_penalty(sequences, length)
        return tf.compat.v1.summary.merge(
            written + [penalty_summary] + self._weight_summaries())

    def _update_step(self, optimizers, clip_ratio, batch):
        """One gradient step of the `optimizers` on a batch of sequences, skipped when not finite.

        Once `kl_stop` has ended the update, its remaining steps compute
        nothing: they report zeros, and `kl_stopped` 1.

        Args:
          optimizers: Dict of `_Optimizer` by name, between them training every
            trainable variable of the network once.
          clip_ratio: Scalar tensor, the current clip ratio of the objective.
          batch: Batch of sequences from `parts.iterate_sequences`.

        Returns:
          Dict of the scalar metrics named in `_update_metrics`.
        """
        gradient_step = functools.partial(self._gradient_step, optimizers, clip_ratio, batch)
        if not self._config.kl_stop:
            return gradient_step()
        left_out = dict.fromkeys(self._update_metrics, 0.0) | dict(kl_stopped=1.0)
        return tools.ordered_cond(
            self._kl_stopped.read_value(),
            lambda: {name: tf.constant(value) for name, value in left_out.items()},
            gradient_step)

    def _gradient_step(self, optimizers, clip_ratio, batch):
        """The gradient step of `_update_step`, applied unless `kl_stop` ends the update here."""
        config = self._config
        variables = self._network.trainable_variables
        loss_and_gradients = functools.partial(
            self._loss_and_gradients, optimizers['learning_rate'].optimizer, variables,
            clip_ratio)
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
        should_apply = is_finite
        if config.kl_stop:
            stopped = metrics['kl'] > config.kl_stop
            if config.kl_stop_start:
                stopped &= tf.cast(self._step, tf.float32) >= config.kl_stop_start * config.steps
            should_apply &= ~stopped
            metrics['kl_stopped'] = tf.cast(stopped, tf.float32)
        optimize = tools.ordered_cond(
            should_apply, lambda: tf.group(*[
                optimizer.apply(gradients, variables) for optimizer in optimizers.values()]),
            tf.no_op)
        if config.kl_stop:
            with tf.control_dependencies([optimize]):
                optimize = self._kl_stopped.assign(stopped)
        metrics['skipped_updates'] = 1.0 - tf.cast(is_finite, tf.float32)
        with tf.control_dependencies([optimize]):
            return {name: tf.identity(metrics[name]) for name in self._update_metrics}

    def _loss_and_gradients(self, optimizer, variables, clip_ratio, batch):
        """The loss of a batch of sequences and its gradients, clipped by global norm.

        Returns:
          Tuple of the scalar loss, the gradients of `variables`, and a dict of
          the metrics named in `_UPDATE_METRICS` but `skipped_updates`.
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
            self._log_prob(old_policy, action), sequences['advantage'], length, self._penalty,
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

    def _values(self, observ, state, length):
        """The value of each step of `[batch, time]` sequences, seen from its stored state.

        A recurrent network takes one step from each stored state, so every
        value is the one the network gave while acting, also after the last
        step of a rollout and where a time limit cut an episode.
        """
        if not self._is_recurrent:
            return self._network(observ, length).value
        steps = tf.shape(observ)[:2]
        merged = nested.map(
            lambda tensor: tf.reshape(tensor, tf.concat([[-1], tf.shape(tensor)[2:]], 0)),
            (observ, state))
        value = self._network(
            merged[0][:, None], tf.ones(tf.shape(merged[0])[:1], tf.int32), merged[1]).value
        return utility.mask(tf.reshape(value, steps), length)

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
                adjust = self._penalty.assign(
                    tf.clip_by_value(self._penalty * factor, lower, upper))
            else:
                adjust = tf.no_op()
            with tf.control_dependencies([adjust]):
                return tf.compat.v1.summary.merge([
                    summaries.scalar('training/kl_change', kl_change),
                    summaries.scalar('training/penalty', self._penalty.read_value())])

    def _define_optimizers(self, learning_rate):
        """One optimizer for the whole network, or one each for the policy and value.

        With `value_learning_rate`, the variables under a `value` variable scope
        train with that rate, on the schedule of `learning_rate`, and the others
        with `learning_rate`.

        Args:
          learning_rate: Scalar tensor, the current rate of the policy.

        Returns:
          Dict of `_Optimizer` by the name of its learning rate in TensorBoard.

        Raises:
          ValueError: If `value_learning_rate` is set and the network has no
            variables under a `value` scope.
        """
        config = self._config
        variables = self._network.trainable_variables
        if config.value_learning_rate is None:
            return dict(learning_rate=_Optimizer(
                config.optimizer(learning_rate), learning_rate, range(len(variables))))
        is_value = ['/value/' in variable.name for variable in variables]
        if not any(is_value):
            raise ValueError(
                'value_learning_rate needs a network whose value variables lie under a '
                "'value' variable scope; set value_learning_rate=None.")
        with tf.name_scope('value_learning_rate'):
            value_rate = learning_rate * (config.value_learning_rate / config.learning_rate)
        return dict(
            learning_rate=_Optimizer(
                config.optimizer(learning_rate), learning_rate,
                [index for index, value in enumerate(is_value) if not value]),
            value_learning_rate=_Optimizer(
                config.optimizer(value_rate), value_rate,
                [index for index, value in enumerate(is_value) if value]))

    def _weight_summaries(self):
        """Histograms of the trainable weights, grouped by the configured regexes."""
        histograms = []
        variables = tf.compat.v1.trainable_variables()
        for group, pattern in self._config.weight_summaries.items():
            for variable in [each for each in variables if re.match(pattern, each.name)]:
                name = variable.name.split(':')[0]
                histograms.append(summaries.histogram(f'weights_{group}/{name}', variable))
        return histograms

    def _keep_for_logging(self, summary):
        """An update's summary on a step that logs; else held until the next such step.

        Only the summaries of steps that log are written, and updates rarely
        fall on those steps.
        """
        def keep(now, later):
            with tf.control_dependencies([self._pending_summary.assign(later)]):
                return tf.identity(now)
        # A summary held from an earlier update gives way to this one's.
        return tools.ordered_cond(
            self._should_log, lambda: keep(summary, ''), lambda: keep('', summary))

    def _take_pending_summary(self):
        """The summary of the last update not yet written ('' if none), then forget it."""
        summary = self._pending_summary.read_value()
        with tf.control_dependencies([summary]):
            clear = self._pending_summary.assign('')
        with tf.control_dependencies([clear]):
            return tf.identity(summary)

    def _summary_if_logging(self, build_summaries):
        """Merge the summaries `build_summaries()` creates when logging, else ''.

        A function call, so steps that do not log skip the bookkeeping of the
        tensors the summaries read (Pendulum training 5-10% faster).
        """
        return tools.ordered_cond(
            self._should_log,
            lambda: tf.compat.v1.summary.merge(build_summaries() or [tf.constant('')]),
            lambda: tf.constant(''), as_function=True)


def _variable(name, initial_value):
    """A non-trainable variable for algorithm state; its name is made unique."""
    return tf.Variable(initial_value, trainable=False, name=name)
