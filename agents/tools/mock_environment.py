"""The original's import path of `MockEnvironment`, which now lives in `agents.tools.envs`."""

from agents.tools.envs.mock_environment import MockEnvironment  # noqa: F401
