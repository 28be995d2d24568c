"""The original's import path of `StreamingNormalize`, now in `streaming_normalize`."""

from agents.parts.streaming_normalize import StreamingNormalize  # noqa: F401
