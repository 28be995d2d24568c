"""Put an environment into the TensorFlow graph."""

import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents.tools import nested
from agents.tools import spaces
from agents.tools.spaces import check_space
from agents.tools.spaces import leaf_spaces
from agents.tools.spaces import space_shape

# Variables holding environment state live in this variable scope. Its name
# contains `_temporary` so that savers can exclude them from checkpoints.
VARIABLE_SCOPE = 'environment_temporary'


def space_dtype(space):
    """TensorFlow dtype of one space's values: float32 for float Boxes, else int32 or the Box's."""
    if isinstance(space, spaces.INTEGER_SPACES):
        return tf.int32
    if isinstance(space, gym.spaces.Box):
        if np.issubdtype(space.dtype, np.floating):
            return tf.float32
        return tf.as_dtype(space.dtype)
    raise spaces.unsupported_space(space)


def check_numerics(tensor, message):
    """Check a float tensor for NaN and infinity; integer tensors pass unchanged."""
    if tensor.dtype.is_floating:
        return tf.debugging.check_numerics(tensor, message)
    return tensor


class InGraphEnv:
    """Steps and resets one environment as TensorFlow operations.

    The current observation, last action, reward, done and terminated flags are
    stored in non-trainable variables, so other operations of the graph can read
    them after `simulate` or `reset` ran.
    """

    def __init__(self, env):
        """Put a Gymnasium environment into the graph.

        Args:
          env: Gymnasium-style environment with Box or Discrete spaces.
        """
        self._env = env
        self._create_variables(batch_shape=())

    def __getattr__(self, name):
        """Forward unknown attributes to the environment."""
        if name.startswith('__') or name == '_env':
            raise AttributeError(name)
        return getattr(self._env, name)

    def simulate(self, action):
        """Step the environment.

        Args:
          action: Tensor holding the action to apply; a batch of actions for a
            batch environment.

        Returns:
          Operation that steps the environment and updates the variables.
        """
        with tf.name_scope('environment/simulate'):
            action = tf.convert_to_tensor(action, self._action_dtype)
            action = check_numerics(action, 'action')
            *observ, reward, terminated, truncated = tf.numpy_function(
                self._step, [action],
                self._observ_dtypes + [tf.float32, tf.bool, tf.bool], name='step')
            observ = [check_numerics(part, 'observ') for part in observ]
            reward = check_numerics(reward, 'reward')
            return tf.group(
                *[variable.assign(tf.reshape(part, variable.shape))
                  for variable, part in zip(nested.flatten(self._observ), observ)],
                self._action.assign(tf.reshape(action, self._action.shape)),
                self._reward.assign(tf.reshape(reward, self._reward.shape)),
                self._done.assign(tf.reshape(terminated | truncated, self._done.shape)),
                self._terminated.assign(tf.reshape(terminated, self._terminated.shape)))

    def reset(self):
        """Reset the environment.

        Returns:
          Tensor of the first observation of the new episode (a nest of them
          for Tuple and Dict observation spaces).
        """
        with tf.name_scope('environment/reset'):
            observ = tf.numpy_function(self._reset, [], self._observ_dtypes, name='reset')
            observ = [
                check_numerics(tf.reshape(part, variable.shape), 'observ')
                for variable, part in zip(nested.flatten(self._observ), observ)]
            with tf.control_dependencies([
                    *[variable.assign(part)
                      for variable, part in zip(nested.flatten(self._observ), observ)],
                    self._reward.assign(0.0),
                    self._done.assign(False),
                    self._terminated.assign(False)]):
                return self._pack_observ([tf.identity(part) for part in observ])

    @property
    def observ(self):
        """Variable holding the current observation; a nest of them for Tuple and Dict spaces."""
        return self._observ

    @property
    def action(self):
        """Variable holding the last action."""
        return self._action

    @property
    def reward(self):
        """Variable holding the last reward."""
        return self._reward

    @property
    def done(self):
        """Variable telling whether the episode ended (terminated or truncated)."""
        return self._done

    @property
    def terminated(self):
        """Variable telling whether the episode reached a terminal state."""
        return self._terminated

    def _create_variables(self, batch_shape):
        """Create the state variables, with `batch_shape` before each element's shape."""
        check_space(self._env.observation_space, 'observation')
        check_space(self._env.action_space, 'action')
        self._observ_structure = leaf_spaces(self._env.observation_space)
        parts = nested.flatten(self._observ_structure)
        self._observ_dtypes = [space_dtype(part) for part in parts]
        self._action_dtype = space_dtype(self._env.action_space)
        action_shape = batch_shape + space_shape(self._env.action_space)
        with tf.compat.v1.variable_scope(VARIABLE_SCOPE):
            names = [f'observ_{index}' for index in range(len(parts))]
            if not isinstance(self._observ_structure, (tuple, dict)):
                names = ['observ']
            self._observ = self._pack_observ([
                _state_variable(name, tf.zeros(batch_shape + space_shape(part), dtype))
                for name, part, dtype in zip(names, parts, self._observ_dtypes)])
            self._action = _state_variable('action', tf.zeros(action_shape, self._action_dtype))
            self._reward = _state_variable('reward', tf.zeros(batch_shape, tf.float32))
            # Episodes count as done before the first reset, so that simulate resets them.
            self._done = _state_variable('done', tf.ones(batch_shape, tf.bool))
            self._terminated = _state_variable('terminated', tf.zeros(batch_shape, tf.bool))

    def _pack_observ(self, parts):
        """The observation's nest of the space, from its parts in the order of `nested.flatten`."""
        return nested.pack_as(self._observ_structure, parts)

    def _observ_arrays(self, observ):
        """The parts of an observation (or a batch) as arrays of the variables' dtypes."""
        return [
            np.asarray(part, dtype.as_numpy_dtype)
            for part, dtype in zip(nested.flatten(observ), self._observ_dtypes)]

    def _step(self, action):
        observ, reward, terminated, truncated, _ = self._env.step(action)
        return self._observ_arrays(observ) + [
            np.asarray(reward, np.float32),
            np.asarray(terminated, bool),
            np.asarray(truncated, bool)]

    def _reset(self):
        observ, _ = self._env.reset()
        return self._observ_arrays(observ)


def _state_variable(name, initial_value):
    """Create a non-trainable resource variable for environment state."""
    return tf.compat.v1.get_variable(
        name, initializer=initial_value, trainable=False, use_resource=True)
