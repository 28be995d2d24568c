"""Graph parts for any algorithm: memories, normalizers, encoders, sequences, distributions."""

from agents.parts.distributions import Bernoulli
from agents.parts.distributions import Categorical
from agents.parts.distributions import DiagonalGaussian
from agents.parts.distributions import FactoredCategorical
from agents.parts.episode_memory import EpisodeMemory
from agents.parts.iterate_sequences import iterate_sequences
from agents.parts.observation_encoder import ObservationEncoder
from agents.parts.observation_normalizer import ObservationNormalizer
from agents.parts.streaming_normalize import StreamingNormalize
