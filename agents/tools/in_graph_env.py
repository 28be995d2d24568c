"""Put an environment into the TensorFlow graph."""

import gymnasium as gym
import numpy as np
import tensorflow as tf

# Variables holding environment state live in this variable scope. Its name
# contains `_temporary` so that savers can exclude them from checkpoints.
VARIABLE_SCOPE = 'environment_temporary'


def space_shape(space):
    """Shape of one element of a Box or Discrete space."""
    if isinstance(space, gym.spaces.Discrete):
        return ()
    if isinstance(space, gym.spaces.Box):
        return tuple(space.shape)
    raise _unsupported_space(space)


def space_dtype(space):
    """TensorFlow dtype of a Box or Discrete space: float32, int32, or Box's integer type."""
    if isinstance(space, gym.spaces.Discrete):
        return tf.int32
    if isinstance(space, gym.spaces.Box):
        if np.issubdtype(space.dtype, np.floating):
            return tf.float32
        return tf.as_dtype(space.dtype)
    raise _unsupported_space(space)


def check_space(space, kind):
    """Raise a one-line error naming the way around it if the graph cannot hold the space.

    Args:
      space: The environment's space.
      kind: 'observation' or 'action'.

    Raises:
      NotImplementedError: If the space is neither Box nor Discrete.
    """
    if isinstance(space, (gym.spaces.Box, gym.spaces.Discrete)):
        return
    raise _unsupported_space(space, kind)


def _unsupported_space(space, kind='value'):
    route = ''
    if kind == 'observation' and isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        route = (
            '; wrap the environment in gymnasium.wrappers.FlattenObservation to train on '
            'its observations as one Box')
    return NotImplementedError(
        f'In-graph environments take Box and Discrete {kind} spaces, not {space}{route}.')


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
            observ, reward, terminated, truncated = tf.numpy_function(
                self._step, [action],
                [self._observ_dtype, tf.float32, tf.bool, tf.bool], name='step')
            observ = check_numerics(observ, 'observ')
            reward = check_numerics(reward, 'reward')
            return tf.group(
                self._observ.assign(tf.reshape(observ, self._observ.shape)),
                self._action.assign(tf.reshape(action, self._action.shape)),
                self._reward.assign(tf.reshape(reward, self._reward.shape)),
                self._done.assign(tf.reshape(terminated | truncated, self._done.shape)),
                self._terminated.assign(tf.reshape(terminated, self._terminated.shape)))

    def reset(self):
        """Reset the environment.

        Returns:
          Tensor of the first observation of the new episode.
        """
        with tf.name_scope('environment/reset'):
            observ = tf.numpy_function(self._reset, [], self._observ_dtype, name='reset')
            observ = check_numerics(tf.reshape(observ, self._observ.shape), 'observ')
            with tf.control_dependencies([
                    self._observ.assign(observ),
                    self._reward.assign(0.0),
                    self._done.assign(False),
                    self._terminated.assign(False)]):
                return tf.identity(observ)

    @property
    def observ(self):
        """Variable holding the current observation."""
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
        self._observ_dtype = space_dtype(self._env.observation_space)
        self._action_dtype = space_dtype(self._env.action_space)
        observ_shape = batch_shape + space_shape(self._env.observation_space)
        action_shape = batch_shape + space_shape(self._env.action_space)
        with tf.compat.v1.variable_scope(VARIABLE_SCOPE):
            self._observ = _state_variable('observ', tf.zeros(observ_shape, self._observ_dtype))
            self._action = _state_variable('action', tf.zeros(action_shape, self._action_dtype))
            self._reward = _state_variable('reward', tf.zeros(batch_shape, tf.float32))
            # Episodes count as done before the first reset, so that simulate resets them.
            self._done = _state_variable('done', tf.ones(batch_shape, tf.bool))
            self._terminated = _state_variable('terminated', tf.zeros(batch_shape, tf.bool))

    def _step(self, action):
        observ, reward, terminated, truncated, _ = self._env.step(action)
        return (
            np.asarray(observ, self._observ_dtype.as_numpy_dtype),
            np.asarray(reward, np.float32),
            np.asarray(terminated, bool),
            np.asarray(truncated, bool))

    def _reset(self):
        observ, _ = self._env.reset()
        return np.asarray(observ, self._observ_dtype.as_numpy_dtype)


def _state_variable(name, initial_value):
    """Create a non-trainable resource variable for environment state."""
    return tf.compat.v1.get_variable(
        name, initializer=initial_value, trainable=False, use_resource=True)
