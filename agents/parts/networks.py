"""Policy and value networks for BatchPPO.

A network is a cell: an object with `state_size`, `output_size`,
`zero_state(batch_size, dtype)` and `__call__(observ, state)` that maps one
step of a batch of observations to the step's distribution parameters and
value estimate, so `tf.compat.v1.nn.dynamic_rnn` can run any of them over
padded sequences `[batch, time, ...]`. The entry functions give the same
outputs faster: feed-forward cells run on all steps at once, and recurrent
ones loop over time only for their GRU's recurrence. Feed-forward cells carry
a one-unit dummy state, so that every network has the same interface.

The entry functions `feed_forward` and `recurrent` pick the policy's head from
the action space: a `DiagonalGaussian` for a Box, a `Categorical` for a
Discrete, a `FactoredCategorical` (one categorical per entry) for a
MultiDiscrete and a `Bernoulli` per entry for a MultiBinary space.
`feed_forward_gaussian`, `recurrent_gaussian`, `feed_forward_categorical` and
`recurrent_categorical` build one head only. They all return a
`NetworkOutput` and take:

- `config`: dict or attribute-style config with the keys of `NetworkConfig`
  (`policy_layers`, `value_layers`, `init_output_factor`, and for Gaussian
  policies `init_std` and `bounded_mean`; `activation`).
- `action_space`: a one-dimensional Box, a Discrete, a one-dimensional
  MultiDiscrete or a one-dimensional MultiBinary space; integer spaces start
  at 0 (`environments.make_environment` shifts them there).
- `observations`: float tensor `[batch, time, ...]`; each step is flattened.
  PPO's `Policy` encodes observations of any space into it
  (`parts.ObservationEncoder`).
- `length`: integer tensor `[batch]` of valid steps, or None for all.
- `state`: optional initial state, zeros if None; for recurrent networks the
  GRU state `[batch, policy_layers[-1]]`.
- `reset`: optional boolean `[batch, time]`, true where an episode begins
  inside a sequence: a recurrent cell starts that step from the zero state, so
  a sequence may span several episodes. Feed-forward networks keep no state
  between steps and ignore it.

They create their variables with `tf.compat.v1.get_variable` under the
current variable scope; wrap them in `tf.compat.v1.make_template` (or a
reusing variable scope) to share weights between calls.
"""

import collections
import collections.abc
import dataclasses
import math
from typing import Literal

import gymnasium
import numpy as np
import tensorflow as tf

from agents.parts.distributions import Bernoulli
from agents.parts.distributions import Categorical
from agents.parts.distributions import DiagonalGaussian
from agents.parts.distributions import FactoredCategorical
from agents.tools.schema import key

NetworkOutput = collections.namedtuple('NetworkOutput', 'policy, value, state')
NetworkOutput.__doc__ = """Result of running a network over a batch of sequences.

Attributes:
  policy: Action distribution with batch shape `[batch, time]`, a
    `DiagonalGaussian` or `Categorical`; its `parameters` rebuild it.
  value: Value estimate `[batch, time]`.
  state: Cell state after each sequence's last valid step, to continue from.
"""


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetworkConfig:
    """Configuration keys that the networks of this module read."""

    policy_layers: tuple[int, ...] = key(
        (200, 100), 'Hidden layer sizes of the policy; the last is the GRU of recurrent ones.',
        at_least=1)
    value_layers: tuple[int, ...] = key(
        (200, 100), 'Hidden layer sizes of the value network.', at_least=1)
    init_output_factor: float = key(
        0.1, 'Initial scale of the policy output layer; small values start near zero.',
        above=0)
    init_std: float | tuple[float, ...] = key(
        0.35, 'Initial standard deviation of Gaussian policies, one or per action.', above=0)
    bounded_mean: bool = key(
        True, 'Pass the mean of Gaussian policies through a tanh, inside the action range.')
    activation: Literal['tanh', 'relu'] = key('tanh', 'Activation of the hidden layers.')


class GRUCell:
    """Gated recurrent unit (Cho et al. 2014).

    As a cell, it takes one step of inputs and the state. Over sequences, the
    work on the inputs does not depend on the state: `project` does it for all
    steps at once, and `step` does the rest, one step after another.

    Args:
      size: Number of units, the size of the state and the output.
    """

    def __init__(self, size):
        self._size = _check_positive_int('GRU size', size)

    @property
    def state_size(self):
        return self._size

    @property
    def output_size(self):
        return self._size

    def zero_state(self, batch_size, dtype):
        return tf.zeros([batch_size, self._size], dtype)

    def __call__(self, inputs, state):
        layers = self.layers(inputs.shape[-1])
        new_state = self.step(layers, self.project(layers, inputs), state)
        return new_state, new_state

    def layers(self, input_size):
        """The weights of the gates and of the candidate, created on the first call.

        Each layer keeps one weight `[input_size + size, outputs]` over the
        concatenated input and state; it is returned split into input and
        state rows.
        """
        with tf.compat.v1.variable_scope('gru'):
            return (
                _GRULayer.get('gates', input_size, self._size, 2 * self._size,
                              tf.compat.v1.ones_initializer()),
                _GRULayer.get('candidate', input_size, self._size, self._size,
                              tf.compat.v1.zeros_initializer()))

    def project(self, layers, inputs):
        """The inputs' part of the gates and the candidate, for a batch of steps `[n, features]`."""
        return tuple(tf.matmul(inputs, layer.input_weight) + layer.bias for layer in layers)

    def step(self, layers, projected, state):
        """The next state, from one step of `project`'s outputs and the state."""
        gates, candidate = layers
        gates_input, candidate_input = projected
        reset, update = tf.split(
            tf.sigmoid(gates_input + tf.matmul(state, gates.state_weight)), 2, 1)
        candidate = tf.tanh(candidate_input + tf.matmul(reset * state, candidate.state_weight))
        return update * state + (1 - update) * candidate


class _GRULayer(collections.namedtuple('_GRULayer', 'input_weight, state_weight, bias')):
    """A dense layer of a GRU over `[inputs, state]`, its weight split by rows."""

    @classmethod
    def get(cls, name, input_size, state_size, outputs, bias_initializer):
        with tf.compat.v1.variable_scope(name):
            weight = tf.compat.v1.get_variable(
                'weight', [input_size + state_size, outputs], tf.float32,
                tf.compat.v1.glorot_uniform_initializer())
            bias = tf.compat.v1.get_variable('bias', [outputs], tf.float32, bias_initializer)
        return cls(weight[:input_size], weight[input_size:], bias)


class _FeedForwardCell:
    """A policy network of hidden layers and output heads, and a value network.

    Subclasses build `_heads(observ, features)` on the policy's last hidden
    layer. The cell carries the dummy state that dynamic_rnn needs.
    """

    # Feed-forward cells are applied to all time steps at once, not in a loop.
    is_recurrent = False

    @property
    def state_size(self):
        return 1

    def zero_state(self, batch_size, dtype):
        return tf.zeros([batch_size, 1], dtype)

    def __call__(self, observ, state):
        observ = _flatten(observ)
        with tf.compat.v1.variable_scope('policy'):
            features = _mlp(observ, self._policy_layers, self._activation)
        return self._heads(observ, features), state

    def _value_input(self, observ, policy_features):
        """What the value network reads: the observation alone."""
        del policy_features
        return observ


class FeedForwardGaussian(_FeedForwardCell):
    """Separate policy and value networks for continuous actions.

    The policy network outputs the mean action, by default through a tanh
    that keeps it inside the normalized action range [-1, 1]; the log standard
    deviation is a learned vector that does not depend on the observation. The
    cell outputs `(mean [batch, action_size], log_std [batch, action_size],
    value [batch])`.

    Args:
      policy_layers: Sizes of the hidden layers of the policy network.
      value_layers: Sizes of the hidden layers of the value network.
      action_size: Number of action dimensions.
      init_std: Initial standard deviation, a positive float or one per dimension.
      init_output_factor: Scale of the variance-scaling initialiser of the mean
        output layer; small values start with actions near zero.
      bounded_mean: Whether the mean passes through a tanh. An unbounded (linear)
        mean keeps its gradient where the best action lies at the bound: samples
        beyond the bound are clipped by the environment, which pushes a tanh
        mean into saturation, where it can no longer change.
    """

    def __init__(self, policy_layers, value_layers, action_size, init_std, init_output_factor,
                 bounded_mean=True, activation='tanh'):
        self._activation = _activation(activation)
        self._policy_layers = _check_layers('policy_layers', policy_layers)
        self._value_layers = _check_layers('value_layers', value_layers)
        self._action_size = _check_positive_int('action_size', action_size)
        self._init_log_std = _initial_log_std(init_std, self._action_size)
        self._init_output_factor = _check_positive_float('init_output_factor', init_output_factor)
        self._mean_activation = tf.tanh if bounded_mean else None

    @property
    def output_size(self):
        return (self._action_size, self._action_size, tf.TensorShape([]))

    def _heads(self, observ, features):
        """The outputs, from the observations and the policy's last hidden layer."""
        with tf.compat.v1.variable_scope('policy'):
            mean = _dense(
                features, self._action_size, self._mean_activation,
                weight_initializer=_output_initializer(self._init_output_factor), name='mean')
            log_std = tf.compat.v1.get_variable(
                'log_std', [self._action_size], tf.float32,
                tf.compat.v1.constant_initializer(self._init_log_std))
            log_std = tf.broadcast_to(log_std, tf.shape(mean))
        value = _value_network(
            self._value_input(observ, features), self._value_layers, self._activation)
        return mean, log_std, value


class _GRUPolicy:
    """Makes the last hidden layer of a policy network a GRU, and the network recurrent.

    Mixed in before a feed-forward cell class whose outputs come from its
    policy's last hidden layer through `_heads`. The value network reads the
    GRU's output beside the observation, so it too knows what the observation
    does not show, and its loss helps the GRU learn to remember it. The state
    is the GRU state `[batch, policy_layers[-1]]`.

    Over sequences (`unroll`), only the GRU's recurrence runs step by step: the
    layers before it, its products with the inputs, and the heads after it
    each run once on all steps.
    """

    is_recurrent = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self._policy_layers:
            raise ValueError(
                f'{type(self).__name__} needs at least one policy layer, the size of its GRU.')
        self._core = GRUCell(self._policy_layers[-1])

    @property
    def state_size(self):
        return self._core.state_size

    def zero_state(self, batch_size, dtype):
        return self._core.zero_state(batch_size, dtype)

    def __call__(self, observ, state):
        observ = _flatten(observ)
        with tf.compat.v1.variable_scope('policy'):
            features, state = self._core(self._encode(observ), state)
        return self._heads(observ, features), state

    def unroll(self, observations, length, state, keep):
        """The outputs over sequences `[batch, time, ...]`, as dynamic_rnn of the cell gives them.

        Args:
          observations: Tensor `[batch, time, ...]`.
          length: Integer tensor `[batch]` of valid steps, or None for all.
          state: The state before the first step, or None for zeros.
          keep: Float tensor `[batch, time, 1]`, zero at the steps whose state
            restarts from zeros, or None where none does.

        Returns:
          Tuple of the outputs `[batch, time, ...]`, zero after each
          sequence's length, and the state after its last valid step.
        """
        batch_size, num_steps = tf.shape(observations)[0], tf.shape(observations)[1]
        observ = _flatten(_merge_time_axis(observations))
        with tf.compat.v1.variable_scope('policy'):
            inputs = self._encode(observ)
            layers = self._core.layers(inputs.shape[-1])
            projected = self._core.project(layers, inputs)
        inputs = tf.nest.map_structure(
            lambda tensor: _split_time_axis(tensor, batch_size, num_steps), projected)
        cell = _ProjectedGRU(self._core, layers, resets=keep is not None)
        if keep is not None:
            inputs = (inputs, keep)
        if observations.shape[1] == 1:  # Acting and values: one step needs no loop.
            features, state = _single_step(cell, inputs, length, state, batch_size)
        else:
            features, state = tf.compat.v1.nn.dynamic_rnn(
                cell, inputs, length, initial_state=state, dtype=tf.float32)
        outputs = self._heads(observ, _merge_time_axis(features))
        return _restore_time_axis(outputs, batch_size, num_steps, length), state

    def _encode(self, observ):
        """The policy's hidden layers before the GRU."""
        return _mlp(observ, self._policy_layers[:-1], self._activation)

    def _value_input(self, observ, policy_features):
        return tf.concat([observ, policy_features], 1)


class _ProjectedGRU:
    """The step-by-step part of a GRU, for dynamic_rnn: inputs are `GRUCell.project`'s outputs.

    With `resets`, its input per step is `(projected, keep)`, where `keep` is
    `[batch, 1]`, zero at a step whose state restarts from zeros (an episode
    begins there); otherwise it is `projected` alone.
    """

    def __init__(self, core, layers, resets):
        self._core = core
        self._layers = layers
        self._resets = resets

    @property
    def state_size(self):
        return self._core.state_size

    @property
    def output_size(self):
        return self._core.output_size

    def zero_state(self, batch_size, dtype):
        return self._core.zero_state(batch_size, dtype)

    def __call__(self, inputs, state):
        if self._resets:
            inputs, keep = inputs
            state = state * keep
        new_state = self._core.step(self._layers, inputs, state)
        return new_state, new_state


class RecurrentGaussian(_GRUPolicy, FeedForwardGaussian):
    """Like `FeedForwardGaussian`, with a GRU as the policy's last hidden layer.

    The policy network is an MLP of `policy_layers[:-1]`, then a GRU of
    `policy_layers[-1]` units, then the mean output. Takes the arguments of
    `FeedForwardGaussian`.
    """


class _LogitsCell(_FeedForwardCell):
    """Policy and value networks whose policy's parameters are logits of a fixed shape.

    The logits layer is a dense layer of `prod(logits_shape)` units, shaped
    into `logits_shape` and passed through `_mask_logits` when it has more
    than one axis. The cell outputs `(logits [batch, *logits_shape], value [batch])`.
    """

    def __init__(self, policy_layers, value_layers, logits_shape, init_output_factor,
                 activation):
        self._activation = _activation(activation)
        self._policy_layers = _check_layers('policy_layers', policy_layers)
        self._value_layers = _check_layers('value_layers', value_layers)
        self._logits_shape = tuple(logits_shape)
        self._init_output_factor = _check_positive_float('init_output_factor', init_output_factor)

    @property
    def output_size(self):
        return (tf.TensorShape(self._logits_shape), tf.TensorShape([]))

    def _heads(self, observ, features):
        """The outputs, from the observations and the policy's last hidden layer."""
        with tf.compat.v1.variable_scope('policy'):
            logits = _dense(
                features, math.prod(self._logits_shape),
                weight_initializer=_output_initializer(self._init_output_factor),
                name='logits')
            if len(self._logits_shape) > 1:
                logits = self._mask_logits(tf.reshape(logits, [-1, *self._logits_shape]))
        value = _value_network(
            self._value_input(observ, features), self._value_layers, self._activation)
        return logits, value

    def _mask_logits(self, logits):
        return logits


class FeedForwardCategorical(_LogitsCell):
    """Separate policy and value networks for discrete actions.

    The cell outputs `(logits [batch, num_actions], value [batch])`.

    Args:
      policy_layers: Sizes of the hidden layers of the policy network.
      value_layers: Sizes of the hidden layers of the value network.
      num_actions: Number of discrete actions.
      init_output_factor: Scale of the variance-scaling initialiser of the logits
        layer; small values start with a near-uniform policy.
      activation: Name of the hidden layers' activation, 'tanh' or 'relu'.
    """

    def __init__(self, policy_layers, value_layers, num_actions, init_output_factor,
                 activation='tanh'):
        num_actions = _check_positive_int('num_actions', num_actions)
        super().__init__(
            policy_layers, value_layers, (num_actions,), init_output_factor, activation)


class FeedForwardFactoredCategorical(_LogitsCell):
    """Separate policy and value networks for MultiDiscrete actions: a categorical per entry.

    The cell outputs `(logits [batch, entries, classes], value [batch])`, where
    `classes` is the largest number of classes of an entry; the classes an
    entry lacks get the logit `FactoredCategorical.PADDING`.

    Args:
      policy_layers: Sizes of the hidden layers of the policy network.
      value_layers: Sizes of the hidden layers of the value network.
      nvec: Number of classes of each entry.
      init_output_factor: Scale of the variance-scaling initialiser of the logits
        layer; small values start with a near-uniform policy.
      activation: Name of the hidden layers' activation, 'tanh' or 'relu'.
    """

    def __init__(self, policy_layers, value_layers, nvec, init_output_factor,
                 activation='tanh'):
        self._nvec = tuple(_check_positive_int('nvec entry', size) for size in nvec)
        super().__init__(
            policy_layers, value_layers, (len(self._nvec), max(self._nvec)),
            init_output_factor, activation)

    def _mask_logits(self, logits):
        valid = np.arange(max(self._nvec))[None] < np.array(self._nvec)[:, None]
        return tf.where(valid, logits, FactoredCategorical.PADDING)


class FeedForwardBernoulli(_LogitsCell):
    """Separate policy and value networks for MultiBinary actions: a Bernoulli per entry.

    The cell outputs `(logits [batch, entries], value [batch])`.

    Args:
      policy_layers: Sizes of the hidden layers of the policy network.
      value_layers: Sizes of the hidden layers of the value network.
      entries: Number of 0/1 entries of an action.
      init_output_factor: Scale of the variance-scaling initialiser of the logits
        layer; small values start near probability one half.
      activation: Name of the hidden layers' activation, 'tanh' or 'relu'.
    """

    def __init__(self, policy_layers, value_layers, entries, init_output_factor,
                 activation='tanh'):
        entries = _check_positive_int('entries', entries)
        super().__init__(policy_layers, value_layers, (entries,), init_output_factor, activation)


class RecurrentCategorical(_GRUPolicy, FeedForwardCategorical):
    """Like `FeedForwardCategorical`, with a GRU as the policy's last hidden layer.

    Takes the arguments of `FeedForwardCategorical`.
    """


class RecurrentFactoredCategorical(_GRUPolicy, FeedForwardFactoredCategorical):
    """Like `FeedForwardFactoredCategorical`, with a GRU as the policy's last hidden layer."""


class RecurrentBernoulli(_GRUPolicy, FeedForwardBernoulli):
    """Like `FeedForwardBernoulli`, with a GRU as the policy's last hidden layer."""


def feed_forward(config, action_space, observations, length, state=None, reset=None):
    """Feed-forward policy and value network whose policy fits the action space.

    Box actions get a `DiagonalGaussian`, Discrete ones a `Categorical`,
    MultiDiscrete ones a `FactoredCategorical` and MultiBinary ones a
    `Bernoulli`.
    """
    return _network_for(False, config, action_space, observations, length, state, reset)


def recurrent(config, action_space, observations, length, state=None, reset=None):
    """Recurrent network whose policy fits the action space, as `feed_forward`'s does."""
    return _network_for(True, config, action_space, observations, length, state, reset)


def feed_forward_gaussian(config, action_space, observations, length, state=None, reset=None):
    """Feed-forward policy and value network whose policy is a `DiagonalGaussian`."""
    return _gaussian_network(
        FeedForwardGaussian, config, action_space, observations, length, state, reset)


def recurrent_gaussian(config, action_space, observations, length, state=None, reset=None):
    """Recurrent network (see `RecurrentGaussian`) whose policy is a `DiagonalGaussian`."""
    return _gaussian_network(
        RecurrentGaussian, config, action_space, observations, length, state, reset)


def feed_forward_categorical(
        config, action_space, observations, length, state=None, reset=None):
    """Feed-forward policy and value network whose policy is a `Categorical` of int32 actions."""
    return _categorical_network(
        FeedForwardCategorical, config, action_space, observations, length, state, reset)


def recurrent_categorical(config, action_space, observations, length, state=None, reset=None):
    """Recurrent network (see `RecurrentCategorical`) whose policy is a `Categorical`."""
    return _categorical_network(
        RecurrentCategorical, config, action_space, observations, length, state, reset)


# PPO trains recurrent networks on sequences and others on single steps.
recurrent.is_recurrent = True
recurrent_gaussian.is_recurrent = True
recurrent_categorical.is_recurrent = True


def _network_for(is_recurrent, config, action_space, observations, length, state, reset):
    """The network of the head that fits the action space, feed-forward or recurrent."""
    for space_type, (feed_forward_cell, recurrent_cell, build) in _HEADS.items():
        if isinstance(action_space, space_type):
            cell_type = recurrent_cell if is_recurrent else feed_forward_cell
            return build(cell_type, config, action_space, observations, length, state, reset)
    raise ValueError(
        f'No policy head fits the action space {action_space}: the networks take Box, '
        'Discrete, MultiDiscrete and MultiBinary actions.')


def _fitting_network(action_space):
    """The name of the built-in network whose head fits the action space, for error messages."""
    for space_type, name in (
            (gymnasium.spaces.Box, 'feed_forward_gaussian or recurrent_gaussian'),
            (gymnasium.spaces.Discrete, 'feed_forward_categorical or recurrent_categorical')):
        if isinstance(action_space, space_type):
            return name
    return 'feed_forward or recurrent, which pick their head from the action space'


def _gaussian_network(cell_type, config, action_space, observations, length, state, reset):
    if not isinstance(action_space, gymnasium.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(
            'Gaussian networks need a one-dimensional gymnasium.spaces.Box action space, '
            f'got {action_space}; use the network {_fitting_network(action_space)}.')
    cell = cell_type(
        _config_value(config, 'policy_layers'), _config_value(config, 'value_layers'),
        action_space.shape[0], _config_value(config, 'init_std'),
        _config_value(config, 'init_output_factor'),
        bool(_config_value(config, 'bounded_mean', True)),
        _config_value(config, 'activation', 'tanh'))
    (mean, log_std, value), state = _run_cell(cell, observations, length, state, reset)
    return NetworkOutput(DiagonalGaussian(mean, log_std), value, state)


def _categorical_network(cell_type, config, action_space, observations, length, state, reset):
    if not isinstance(action_space, gymnasium.spaces.Discrete) or action_space.start != 0:
        raise ValueError(
            'Categorical networks need a gymnasium.spaces.Discrete action space starting '
            f'at 0, got {action_space}; use the network {_fitting_network(action_space)}.')
    cell = cell_type(
        _config_value(config, 'policy_layers'), _config_value(config, 'value_layers'),
        int(action_space.n), _config_value(config, 'init_output_factor'),
        _config_value(config, 'activation', 'tanh'))
    (logits, value), state = _run_cell(cell, observations, length, state, reset)
    return NetworkOutput(Categorical(logits), value, state)


def _factored_network(cell_type, config, action_space, observations, length, state, reset):
    if (not isinstance(action_space, gymnasium.spaces.MultiDiscrete) or
            action_space.nvec.ndim != 1 or np.any(action_space.start != 0)):
        raise ValueError(
            'Factored categorical networks need a one-dimensional MultiDiscrete action space '
            f'starting at 0, got {action_space}.')
    cell = cell_type(
        _config_value(config, 'policy_layers'), _config_value(config, 'value_layers'),
        action_space.nvec.tolist(), _config_value(config, 'init_output_factor'),
        _config_value(config, 'activation', 'tanh'))
    (logits, value), state = _run_cell(cell, observations, length, state, reset)
    return NetworkOutput(FactoredCategorical(logits), value, state)


def _bernoulli_network(cell_type, config, action_space, observations, length, state, reset):
    if not isinstance(action_space, gymnasium.spaces.MultiBinary) or len(action_space.shape) != 1:
        raise ValueError(
            f'Bernoulli networks need a one-dimensional MultiBinary action space, got '
            f'{action_space}.')
    cell = cell_type(
        _config_value(config, 'policy_layers'), _config_value(config, 'value_layers'),
        action_space.shape[0], _config_value(config, 'init_output_factor'),
        _config_value(config, 'activation', 'tanh'))
    (logits, value), state = _run_cell(cell, observations, length, state, reset)
    return NetworkOutput(Bernoulli(logits), value, state)


# Per kind of action space: its feed-forward cell, its recurrent cell, and the
# function that builds the network of either.
_HEADS = {
    gymnasium.spaces.Box: (FeedForwardGaussian, RecurrentGaussian, _gaussian_network),
    gymnasium.spaces.Discrete: (
        FeedForwardCategorical, RecurrentCategorical, _categorical_network),
    gymnasium.spaces.MultiDiscrete: (
        FeedForwardFactoredCategorical, RecurrentFactoredCategorical, _factored_network),
    gymnasium.spaces.MultiBinary: (FeedForwardBernoulli, RecurrentBernoulli, _bernoulli_network),
}


def _run_cell(cell, observations, length, state, reset):
    observations = tf.convert_to_tensor(observations)
    shape = observations.shape
    if shape.rank is None or shape.rank < 2 or not shape[2:].is_fully_defined():
        raise ValueError(
            'Networks need observations of shape [batch, time, ...] with a known shape per '
            f'step, got {shape}.')
    with tf.compat.v1.variable_scope('rnn'):
        if not cell.is_recurrent:
            return _apply_to_all_steps(cell, observations, length, state)
        keep = None if reset is None else 1.0 - tf.cast(reset, tf.float32)[..., None]
        return cell.unroll(observations, length, state, keep)


def _apply_to_all_steps(cell, observations, length, state):
    """Run a feed-forward cell on every step at once, as dynamic_rnn would step by step.

    A loop over time steps costs far more than one matrix product over all of
    them, and feed-forward cells do not need it. Outputs after each sequence's
    length are zero (no mask when `length` is None: every step is valid) and
    the state passes through, as with dynamic_rnn.
    """
    batch_size, num_steps = tf.shape(observations)[0], tf.shape(observations)[1]
    if state is None:
        state = cell.zero_state(batch_size, tf.float32)
    outputs, _ = cell(
        _merge_time_axis(observations), tf.zeros([batch_size * num_steps, cell.state_size]))
    return _restore_time_axis(outputs, batch_size, num_steps, length), state


def _single_step(cell, inputs, length, state, batch_size):
    """dynamic_rnn's outputs and final state over sequences of one step."""
    if state is None:
        state = cell.zero_state(batch_size, tf.float32)
    output, new_state = cell(tf.nest.map_structure(lambda tensor: tensor[:, 0], inputs), state)
    if length is not None:
        valid = (length > 0)[:, None]
        output = tf.where(valid, output, tf.zeros_like(output))
        new_state = tf.where(valid, new_state, state)
    return output[:, None], new_state


def _merge_time_axis(tensor):
    """`[batch, time, ...]` to `[batch * time, ...]`."""
    return tf.reshape(tensor, tf.concat([[-1], tf.shape(tensor)[2:]], 0))


def _split_time_axis(tensor, batch_size, num_steps):
    """`[batch * time, ...]` to `[batch, time, ...]`."""
    return tf.reshape(tensor, tf.concat([[batch_size, num_steps], tf.shape(tensor)[1:]], 0))


def _restore_time_axis(outputs, batch_size, num_steps, length):
    """Outputs `[batch * time, ...]` as `[batch, time, ...]`, zero after each sequence's length."""
    valid = None if length is None else tf.sequence_mask(length, num_steps)

    def restore(output):
        output = _split_time_axis(output, batch_size, num_steps)
        if valid is None:
            return output
        mask = tf.reshape(valid, tf.concat([tf.shape(valid), tf.ones(
            [output.shape.rank - 2], tf.int32)], 0))
        return tf.where(mask, output, tf.zeros_like(output))

    return tf.nest.map_structure(restore, outputs)


def _value_network(observ, layers, activation):
    with tf.compat.v1.variable_scope('value'):
        return _dense(_mlp(observ, layers, activation), 1, name='output')[:, 0]


def _mlp(inputs, layers, activation):
    for index, size in enumerate(layers):
        inputs = _dense(inputs, size, activation, name=f'hidden_{index}')
    return inputs


ACTIVATIONS = {'tanh': tf.tanh, 'relu': tf.nn.relu}


def _activation(name):
    if name not in ACTIVATIONS:
        raise ValueError(
            f'Unknown activation {name!r}; choose one of {", ".join(ACTIVATIONS)}.')
    return ACTIVATIONS[name]


def _dense(inputs, size, activation=None, weight_initializer=None, bias_initializer=None,
           name='dense'):
    """Fully connected layer `activation(inputs @ weight + bias)` on `[batch, features]`."""
    with tf.compat.v1.variable_scope(name):
        weight = tf.compat.v1.get_variable(
            'weight', [inputs.shape[-1], size], inputs.dtype,
            weight_initializer or tf.compat.v1.glorot_uniform_initializer())
        bias = tf.compat.v1.get_variable(
            'bias', [size], inputs.dtype, bias_initializer or tf.compat.v1.zeros_initializer())
        outputs = tf.matmul(inputs, weight) + bias
        return activation(outputs) if activation else outputs


def _output_initializer(factor):
    return tf.compat.v1.variance_scaling_initializer(scale=factor, mode='fan_in')


def _flatten(observ):
    """Casts one step of observations `[batch, ...]` to float32 `[batch, features]`."""
    features = observ.shape[1:]
    if not features.is_fully_defined():
        raise ValueError(
            f'Networks need observations whose shape per step is known, got {observ.shape}.')
    return tf.reshape(tf.cast(observ, tf.float32), [-1, math.prod(features.as_list())])


_REQUIRED = object()


def _config_value(config, key, default=_REQUIRED):
    try:
        if isinstance(config, collections.abc.Mapping):
            return config[key]
        return getattr(config, key)
    except (KeyError, AttributeError):
        if default is not _REQUIRED:
            return default
        raise ValueError(f'The network needs `{key}` in the config; add it.') from None


def _initial_log_std(init_std, action_size):
    """Log of `init_std`, a positive number or one per action dimension."""
    try:
        init_std = np.broadcast_to(np.asarray(init_std, np.float64), [action_size])
    except (TypeError, ValueError):
        init_std = None
    if init_std is None or not np.all(init_std > 0):
        raise ValueError(
            f'init_std must be a positive number or {action_size} positive numbers, one per '
            'action dimension.')
    return np.log(init_std).astype(np.float32)


def _check_layers(name, layers):
    if isinstance(layers, collections.abc.Iterable) and not isinstance(layers, (str, bytes)):
        sizes = tuple(layers)
        if all(_is_positive_int(size) for size in sizes):
            return tuple(int(size) for size in sizes)
    raise ValueError(f'{name} must be a list of positive layer sizes, got {layers!r}.')


def _check_positive_int(name, value):
    if not _is_positive_int(value):
        raise ValueError(f'{name} must be a positive integer, got {value!r}.')
    return int(value)


def _is_positive_int(value):
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value > 0


def _check_positive_float(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or value <= 0:
        raise ValueError(f'{name} must be a positive number, got {value!r}.')
    return float(value)
