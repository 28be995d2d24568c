"""The original's import path of `BatchEnv`, which now lives in `agents.tools.envs`."""

from agents.tools.envs.batch_env import BatchEnv  # noqa: F401
