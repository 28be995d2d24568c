"""The environment backends by name, as `--env_backend` chooses them."""

from agents.tools.envs import batch_env
from agents.tools.envs import contract
from agents.tools.envs import envpool
from agents.tools.envs import parallel
from agents.tools.envs import process
from agents.tools.envs import ray


def inprocess_batch_env(constructors, timeout=None):
    """The `inprocess` backend: a blocking `BatchEnv` of environments built here.

    Args:
      constructors: Zero-argument callables, one per environment, each returning
        a Gymnasium environment.
      timeout: Accepted like the process backends' option, and ignored: nothing
        can stop an environment that hangs in this process.
    """
    del timeout
    constructors = contract.check_constructors(constructors, 'The inprocess backend')
    return batch_env.BatchEnv([constructor() for constructor in constructors], blocking=True)


# Backend name -> callable taking the environment constructors and the
# backend's options and returning a batch environment (`contract.BaseBatchEnv`).
BACKENDS = {
    'parallel': parallel.ParallelBatchEnv,
    'inprocess': inprocess_batch_env,
    'process': process.ProcessBatchEnv,
    'ray': ray.RayBatchEnv,
    'envpool': envpool.EnvpoolBatchEnv,
}


def make_batch_env(backend, constructors, **options):
    """Create the batch environment of a backend.

    Args:
      backend: Name of the backend, a key of `BACKENDS`.
      constructors: Zero-argument callables, one per environment, each returning
        a Gymnasium environment.
      **options: Options of the backend, such as `num_workers` of `parallel`.

    Raises:
      ValueError: If the backend is unknown, or two constructors returned the
        same environment object.

    Returns:
      The batch environment, a `contract.BaseBatchEnv`.
    """
    if backend not in BACKENDS:
        raise ValueError(
            f'Unknown environment backend {backend!r}; choose one of {", ".join(BACKENDS)}.')
    batch = BACKENDS[backend](constructors, **options)
    try:
        contract.check_distinct_environments(batch)
    except BaseException:
        batch.close()
        raise
    return batch
