"""Combine several environments into one batched environment."""

import numpy as np


class BatchEnv:
    """Steps and resets a list of environments as one batch.

    Observations, rewards and flags of the environments are stacked into arrays
    whose first dimension indexes the environment, so an agent can process the
    whole batch with one network call. When the environments are external
    processes (see `wrappers.ExternalProcess`), a non-blocking batch first sends
    the action to every worker and only then collects the results, so the workers
    step in parallel.
    """

    def __init__(self, envs, blocking):
        """Combine environments into a batch.

        Args:
          envs: List of Gymnasium-style environments with equal observation and
            action spaces.
          blocking: Step the environments one after another; set to False for
            external environments whose `step` and `reset` accept
            `blocking=False` and return promises.

        Raises:
          ValueError: If there are no environments or their spaces differ.
        """
        if not envs:
            raise ValueError('BatchEnv needs at least one environment.')
        self._envs = list(envs)
        self._blocking = blocking
        observation_space = self._envs[0].observation_space
        action_space = self._envs[0].action_space
        for index, env in enumerate(self._envs[1:], 1):
            if env.observation_space != observation_space:
                raise ValueError(
                    f'All environments must have the same observation space: env 0 has '
                    f'{observation_space} but env {index} has {env.observation_space}.')
            if env.action_space != action_space:
                raise ValueError(
                    f'All environments must have the same action space: env 0 has '
                    f'{action_space} but env {index} has {env.action_space}.')
        self.observation_space = observation_space
        self.action_space = action_space

    def __len__(self):
        """Number of environments in the batch."""
        return len(self._envs)

    def __getitem__(self, index):
        """Access an individual environment of the batch."""
        return self._envs[index]

    def __getattr__(self, name):
        """Forward unknown attributes to the first environment.

        Args:
          name: Attribute to access.

        Returns:
          Value of the attribute of the first environment.
        """
        if name.startswith('__') or name == '_envs':
            raise AttributeError(name)
        return getattr(self._envs[0], name)

    def step(self, actions):
        """Step all environments with one action each.

        Args:
          actions: Batch of actions, one per environment, along the first axis.

        Raises:
          ValueError: If the batch size or the shape of the actions is wrong.

        Returns:
          Tuple of stacked observations, float32 rewards, bool terminated flags,
          bool truncated flags, and a tuple of info dicts.
        """
        actions = self._check_actions(actions)
        if self._blocking:
            transitions = [env.step(action) for env, action in zip(self._envs, actions)]
        else:
            promises = [
                env.step(action, blocking=False) for env, action in zip(self._envs, actions)]
            transitions = [promise() for promise in promises]
        observs, rewards, terminated, truncated, infos = zip(*transitions)
        return (
            np.stack(observs),
            np.asarray(rewards, dtype=np.float32),
            np.asarray(terminated, dtype=bool),
            np.asarray(truncated, dtype=bool),
            tuple(infos))

    def reset(self, indices=None, seeds=None):
        """Reset some or all environments.

        Args:
          indices: Indices of the environments to reset; all if None.
          seeds: Optional seeds, one per reset environment, passed to `reset`.

        Raises:
          ValueError: If an index is out of range or the seeds do not match.

        Returns:
          Tuple of the stacked first observations of the reset environments and a
          tuple of their info dicts.
        """
        if indices is None:
            indices = range(len(self._envs))
        indices = [int(index) for index in np.asarray(indices).reshape(-1)]
        for index in indices:
            if not 0 <= index < len(self._envs):
                raise ValueError(
                    f'Cannot reset environment {index}: the batch has {len(self._envs)} '
                    f'environments.')
        if seeds is None:
            seeds = [None] * len(indices)
        # Gymnasium accepts Python integers only, not NumPy ones.
        seeds = [None if seed is None else int(seed) for seed in seeds]
        if len(seeds) != len(indices):
            raise ValueError(
                f'Got {len(seeds)} seeds for {len(indices)} environments to reset.')
        if self._blocking:
            results = [
                self._envs[index].reset(seed=seed) for index, seed in zip(indices, seeds)]
        else:
            promises = [
                self._envs[index].reset(seed=seed, blocking=False)
                for index, seed in zip(indices, seeds)]
            results = [promise() for promise in promises]
        if not results:
            return np.zeros((0,) + self.observation_space.shape,
                            self.observation_space.dtype), ()
        observs, infos = zip(*results)
        return np.stack(observs), tuple(infos)

    def close(self):
        """Close all environments; safe to call more than once."""
        for env in self._envs:
            if hasattr(env, 'close'):
                env.close()

    def _check_actions(self, actions):
        """Return the actions as an array after checking batch size and shape."""
        actions = np.asarray(actions)
        if actions.ndim == 0 or len(actions) != len(self._envs):
            size = 'a scalar' if actions.ndim == 0 else f'a batch of {len(actions)}'
            raise ValueError(
                f'Expected one action per environment ({len(self._envs)}), got {size}.')
        expected_shape = self.action_space.shape
        if expected_shape is not None and actions.shape[1:] != tuple(expected_shape):
            raise ValueError(
                f'Each action must have shape {tuple(expected_shape)} to match the action '
                f'space {self.action_space}; got actions of shape {actions.shape[1:]} '
                f'(batch shape {actions.shape}).')
        return actions
