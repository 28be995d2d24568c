"""The observation that ended an episode, as the environment returned it, carried in its info.

The shared-memory `parallel` backend keeps observations only in a batch of the
space's dtype, where Gymnasium's and SB3's vector environments hand out the
object the environment returned (a Python int for a Discrete space, float64
for a float32 Box). The adapters build their environments in `KeepFinal` on that
backend, which adds that object to the info of the step that ended the
episode; `pop` takes it out again before the info reaches the user.
"""

import functools

import gymnasium

# The info key holding the final observation between a worker and an adapter.
KEY = 'agents.final_observation'


class KeepFinal(gymnasium.Wrapper):
    """An environment whose step that ends an episode adds its observation to the info."""

    # Not one of the user's wrappers, for `access.is_wrapped`.
    internal_wrapper = True

    def __init__(self, constructor):
        """Build the environment.

        Args:
          constructor: Zero-argument callable returning the environment.
        """
        super().__init__(constructor())

    def step(self, action):
        observ, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info = dict(info, **{KEY: observ})
        return observ, reward, terminated, truncated, info


def wrap(constructors):
    """Constructors of the environments of `constructors`, each in `KeepFinal`."""
    return [functools.partial(KeepFinal, constructor) for constructor in constructors]


def pop(infos, indices):
    """Remove the final observations from the infos at `indices` and return them.

    Args:
      infos: Sequence of info dicts, one per environment.
      indices: Indices of the environments whose episode ended.

    Returns:
      List of the final observations, or None if an info holds none (the
      environments were not built in `KeepFinal`).
    """
    observs = [infos[index].pop(KEY, _MISSING) for index in indices]
    return None if any(observ is _MISSING for observ in observs) else observs


# Marks an info without a final observation.
_MISSING = object()
