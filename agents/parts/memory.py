"""The original's import path of `EpisodeMemory`, which now lives in `episode_memory`."""

from agents.parts.episode_memory import EpisodeMemory  # noqa: F401
