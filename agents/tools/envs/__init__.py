"""Hosting environments for batched training: one batch contract, several backends.

Every backend implements `BaseBatchEnv` (see `contract`): `inprocess`
(`BatchEnv` of environments in this process), `process` (`ProcessBatchEnv`,
one `ExternalProcess` per environment), `parallel` (`ParallelBatchEnv`, a few
workers sharing memory with this process), `ray` (`RayBatchEnv`, Ray actors)
and `envpool` (`EnvpoolBatchEnv`, envpool's C++ pool of the tasks it ships).
`make_batch_env(backend, constructors)` builds one by name.

This package does not import TensorFlow (nor Ray or envpool, until their
backend starts), so worker processes start fast and lean.
"""

from agents.tools.envs.backends import BACKENDS
from agents.tools.envs.backends import make_batch_env
from agents.tools.envs.batch_env import BatchEnv
from agents.tools.envs.contract import BaseBatchEnv
from agents.tools.envs.envpool import EnvpoolBatchEnv
from agents.tools.envs.errors import WaitInterrupted
from agents.tools.envs.errors import WorkerDiedError
from agents.tools.envs.errors import WorkerError
from agents.tools.envs.errors import WorkerTimeoutError
from agents.tools.envs.mock_environment import MockEnvironment
from agents.tools.envs.parallel import ParallelBatchEnv
from agents.tools.envs.process import ExternalProcess
from agents.tools.envs.process import ProcessBatchEnv
from agents.tools.envs.ray import RayBatchEnv
from agents.tools.envs.ray import ray_environments
from agents.tools.envs.remote import RemoteEnvironment
from agents.tools.envs.remote import Request
from agents.tools.envs.remote import serve_request
from agents.tools.envs.vector_env import VectorEnv
