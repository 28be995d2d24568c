"""Put a batch of environments into the TensorFlow graph."""

import tensorflow as tf

from agents.tools import in_graph_env
from agents.tools import nested


class InGraphBatchEnv(in_graph_env.InGraphEnv):
    """Steps and resets a batch of environments as TensorFlow operations.

    The batch environment is stepped through `tf.numpy_function`, so one
    `session.run` can step every environment and run the agent. The current
    observations, last actions, rewards, done and terminated flags are stored in
    non-trainable variables of shape [batch, ...] in the variable scope
    `in_graph_env.VARIABLE_SCOPE`, which checkpoints exclude.
    """

    def __init__(self, batch_env):
        """Put a batch environment into the graph.

        Args:
          batch_env: Batch environment with `step(actions)` and `reset(indices)`,
            such as `BatchEnv`, with spaces that `in_graph_env.check_space` takes.
        """
        self._env = batch_env
        self._create_variables(batch_shape=(len(batch_env),))

    def __len__(self):
        """Number of environments in the batch."""
        return len(self._env)

    def __getitem__(self, index):
        """Access an individual environment of the batch."""
        return self._env[index]

    def reset(self, indices=None):
        """Reset some or all environments of the batch.

        Args:
          indices: Tensor of the indices of the environments to reset; all if None.

        Returns:
          Tensor of the first observations of the reset environments.
        """
        with tf.name_scope('environment/reset'):
            if indices is None:
                indices = tf.range(len(self._env))
            indices = tf.convert_to_tensor(indices, tf.int32)
            observ = tf.numpy_function(
                self._reset_indices, [indices], self._observ_dtypes, name='reset')
            variables = nested.flatten(self._observ)
            observ = [
                in_graph_env.check_numerics(
                    tf.reshape(part, tf.concat([tf.shape(indices), variable.shape[1:]], 0)),
                    'observ')
                for variable, part in zip(variables, observ)]
            falses = tf.zeros_like(indices, tf.bool)
            with tf.control_dependencies([
                    *[tf.compat.v1.scatter_update(variable, indices, part)
                      for variable, part in zip(variables, observ)],
                    tf.compat.v1.scatter_update(
                        self._reward, indices, tf.zeros_like(indices, tf.float32)),
                    tf.compat.v1.scatter_update(self._done, indices, falses),
                    tf.compat.v1.scatter_update(self._terminated, indices, falses)]):
                return self._pack_observ([tf.identity(part) for part in observ])

    def close(self):
        """Close the batch environment."""
        self._env.close()

    def _reset_indices(self, indices):
        observ, _ = self._env.reset(indices)
        return self._observ_arrays(observ)
