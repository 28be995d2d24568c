"""An algorithm that acts randomly and learns nothing, for testing the loop."""

import gymnasium
import numpy as np
import tensorflow as tf


class MockAlgorithm:
    """Implements the algorithm interface of `simulate` with random actions.

    Continuous actions are drawn uniformly from the Box action space; where a
    bound is infinite, [-1, 1] is used for that dimension instead. Discrete
    actions are drawn uniformly from the action indices. Nothing is logged, so
    every method returns an empty summary string.
    """

    def __init__(self, envs):
        """Creates the algorithm.

        Args:
          envs: Sequence of environments (a list or a `BatchEnv`) sharing one
            action space, which must be a Box or a Discrete space.

        Raises:
          TypeError: If the action space is neither Box nor Discrete.
        """
        self._action_space = envs[0].action_space
        if not isinstance(self._action_space,
                          (gymnasium.spaces.Box, gymnasium.spaces.Discrete)):
            raise TypeError(
                f'MockAlgorithm supports Box and Discrete action spaces; got '
                f'{self._action_space!r}.')

    def begin_episode(self, agent_indices):
        """Returns an empty summary; there is no episode state to reset."""
        del agent_indices  # Unused.
        return tf.constant('')

    def perform(self, agent_indices, observ):
        """Draws one random action for each agent.

        Args:
          agent_indices: Int32 vector of the batch rows acting this step.
          observ: Batch of observations, unused.

        Returns:
          Tuple of the batch of actions and an empty summary.
        """
        del observ  # Unused.
        with tf.name_scope('mock_perform'):
            batch_size = tf.shape(agent_indices)[:1]
            space = self._action_space
            if isinstance(space, gymnasium.spaces.Discrete):
                action = tf.random.uniform(
                    batch_size, int(space.start), int(space.start + space.n), tf.int32)
            else:
                low = np.where(np.isfinite(space.low), space.low, -1.0).astype(np.float32)
                high = np.where(np.isfinite(space.high), space.high, 1.0).astype(np.float32)
                shape = tf.concat([batch_size, space.shape], 0)
                action = low + tf.random.uniform(shape) * (high - low)
            return action, tf.constant('')

    def experience(self, agent_indices, observ, action, reward, done, next_observ):
        """Returns an empty summary; nothing is learned from transitions."""
        del agent_indices, observ, action, reward, done, next_observ  # Unused.
        return tf.constant('')

    def end_episode(self, agent_indices):
        """Returns an empty summary; nothing is learned from episodes."""
        del agent_indices  # Unused.
        return tf.constant('')
