"""Streaming normalization of the Box parts of observations; other parts pass unchanged.

Integer observations (Discrete, MultiDiscrete, MultiBinary parts) are indices
and flags, not measurements: centring and scaling them would destroy what they
say, so they keep their values and dtype until the network's encoder
(`observation_encoder`) turns them into one-hot vectors.
"""

import gymnasium as gym
import tensorflow as tf

from agents.parts.streaming_normalize import StreamingNormalize
from agents.tools import nested
from agents.tools.spaces import leaf_spaces


class ObservationNormalizer:
    """Keeps a `StreamingNormalize` for each Box part of an observation space.

    A lone Box space has one normalizer under `name`, so its variables are those
    of a plain `StreamingNormalize`; the Box parts of a Tuple or Dict space get
    `<name>/part_<index>`, by their index in `nested.flatten` order.

    Args:
      space: The observation space, as the in-graph environment holds it.
      observ_template: Nest of tensors of one observation, matching the space.
      clip: Bound of the normalized values.
      name: Name scope of the statistics.
    """

    def __init__(self, space, observ_template, clip, name):
        self._structure = leaf_spaces(space)
        self._lone = isinstance(self._structure, gym.spaces.Box)
        templates = nested.flatten_up_to(self._structure, observ_template)
        self._normalizers = []
        for index, (part, template) in enumerate(zip(
                nested.flatten(self._structure), templates)):
            normalizer = None
            if isinstance(part, gym.spaces.Box):
                normalizer = StreamingNormalize(
                    template, center=True, scale=True, clip=clip,
                    name=name if self._lone else f'{name}/part_{index}')
            self._normalizers.append(normalizer)

    def transform(self, observ):
        """The observations with their Box parts normalized (float32); other parts unchanged."""
        parts = nested.flatten_up_to(self._structure, observ)
        return nested.pack_as(self._structure, [
            part if normalizer is None else normalizer.transform(part)
            for normalizer, part in zip(self._normalizers, parts)])

    def update(self, observ):
        """Merge a batch of observations into the statistics; a summary string tensor."""
        parts = nested.flatten_up_to(self._structure, observ)
        summaries = [
            normalizer.update(part)
            for normalizer, part in zip(self._normalizers, parts) if normalizer is not None]
        return self._merge(summaries)

    def summary(self):
        """Summary string tensor of the statistics of every Box part."""
        return self._merge([
            normalizer.summary() for normalizer in self._normalizers if normalizer is not None])

    def _merge(self, summaries):
        if self._lone:
            return summaries[0]
        return tf.compat.v1.summary.merge(summaries) if summaries else tf.constant('')
