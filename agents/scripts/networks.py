"""The original's import path of the networks; they live with the model, in `agents.parts`."""

from agents.parts.networks import FeedForwardCategorical  # noqa: F401
from agents.parts.networks import FeedForwardGaussian  # noqa: F401
from agents.parts.networks import GRUCell  # noqa: F401
from agents.parts.networks import NetworkConfig  # noqa: F401
from agents.parts.networks import NetworkOutput  # noqa: F401
from agents.parts.networks import RecurrentCategorical  # noqa: F401
from agents.parts.networks import RecurrentGaussian  # noqa: F401
from agents.parts.networks import feed_forward  # noqa: F401
from agents.parts.networks import feed_forward_categorical  # noqa: F401
from agents.parts.networks import feed_forward_gaussian  # noqa: F401
from agents.parts.networks import recurrent  # noqa: F401
from agents.parts.networks import recurrent_categorical  # noqa: F401
from agents.parts.networks import recurrent_gaussian  # noqa: F401
