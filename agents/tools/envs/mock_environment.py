"""A deterministic environment of known behaviour for testing."""

import gymnasium
import numpy as np


class MockEnvironment(gymnasium.Env):
    """Environment whose observations, rewards and durations are predictable.

    At step `t` of an episode (0 after reset) the observation is an array
    filled with `t`, and every step earns a reward of 1, so an episode's score
    equals its duration. Each episode lasts a duration drawn uniformly from
    `[min_duration, max_duration]` by a generator seeded with `seed` (or the
    seed passed to `reset`); its last step returns `terminated=True`.

    The lists `steps` and `durations` hold, for every episode begun so far,
    the number of steps taken and the drawn duration, so tests can check what
    the environment went through.
    """

    metadata = {'render_modes': ['rgb_array']}

    def __init__(self, observ_shape, action_shape, min_duration, max_duration, seed=0,
                 render_mode=None):
        """Creates the environment.

        Args:
          observ_shape: Shape of the observations.
          action_shape: Shape of the actions, which lie in [-1, 1].
          min_duration: Shortest episode length, at least 1.
          max_duration: Longest episode length, at least `min_duration`.
          seed: Seed of the generator drawing the episode durations.
          render_mode: None, or 'rgb_array' to render 16x16 frames whose
            brightness is the step count.

        Raises:
          ValueError: If the durations or the render mode are invalid.
        """
        if not 1 <= min_duration <= max_duration:
            raise ValueError(
                f'Durations must satisfy 1 <= min_duration <= max_duration; got '
                f'min_duration={min_duration} and max_duration={max_duration}.')
        if render_mode not in (None, 'rgb_array'):
            raise ValueError(f"Unsupported render_mode {render_mode!r}; use None or 'rgb_array'.")
        self._observ_shape = tuple(observ_shape)
        self._min_duration = min_duration
        self._max_duration = max_duration
        self._durations_random = np.random.default_rng(seed)
        self.render_mode = render_mode
        self.observation_space = gymnasium.spaces.Box(
            0.0, np.inf, self._observ_shape, np.float32)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, tuple(action_shape), np.float32)
        self.steps = []
        self.durations = []

    def reset(self, seed=None, options=None):
        """Begins a new episode.

        Args:
          seed: If given, reseeds the generator of episode durations.
          options: Ignored.

        Returns:
          Tuple of the first observation (filled with zeros) and an empty info dict.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._durations_random = np.random.default_rng(seed)
        duration = int(self._durations_random.integers(
            self._min_duration, self._max_duration, endpoint=True))
        self.steps.append(0)
        self.durations.append(duration)
        return self._observation(), {}

    def step(self, action):
        """Advances the episode by one step.

        Args:
          action: Array of the action shape.

        Returns:
          Tuple of observation, reward 1.0, terminated, truncated (always
          False) and an empty info dict.

        Raises:
          ValueError: If the action has the wrong shape.
          RuntimeError: If no episode is running: before the first reset or
            after the episode terminated.
        """
        action = np.asarray(action)
        if action.shape != self.action_space.shape:
            raise ValueError(
                f'Action must have shape {self.action_space.shape}; got {action.shape}.')
        if not self.steps:
            raise RuntimeError('Call reset() before step().')
        if self.steps[-1] >= self.durations[-1]:
            raise RuntimeError('The episode has terminated; call reset() before stepping again.')
        self.steps[-1] += 1
        terminated = self.steps[-1] >= self.durations[-1]
        return self._observation(), 1.0, terminated, False, {}

    def render(self):
        """Returns a uint8 frame of shape [16, 16, 3] for the 'rgb_array' mode."""
        if self.render_mode != 'rgb_array':
            raise RuntimeError("Rendering needs render_mode='rgb_array'.")
        step = self.steps[-1] if self.steps else 0
        return np.full((16, 16, 3), min(step, 255), np.uint8)

    def _observation(self):
        return np.full(self._observ_shape, self.steps[-1], np.float32)
