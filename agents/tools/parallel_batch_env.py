"""An earlier import path of `ParallelBatchEnv`, which now lives in `agents.tools.envs`."""

from agents.tools.envs.parallel import ParallelBatchEnv  # noqa: F401
