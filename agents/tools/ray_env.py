"""An earlier import path of the Ray backend, which now lives in `agents.tools.envs.ray`."""

from agents.tools.envs.ray import RayActorDiedError  # noqa: F401
from agents.tools.envs.ray import RayBatchEnv  # noqa: F401
from agents.tools.envs.ray import RayEnvironment  # noqa: F401
from agents.tools.envs.ray import RayEnvironmentError  # noqa: F401
from agents.tools.envs.ray import ray_environments  # noqa: F401
