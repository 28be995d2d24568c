"""Tests of what BatchEnv adds to the batch contract (see contract_test.py)."""

import functools
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from agents import tools
from agents.tools.envs import batch_env
from agents.tools.envs import errors
from agents.tools.envs import process
from agents.tools.envs import testing


def test_importing_hosting_does_not_import_tensorflow():
    code = (
        'import sys\n'
        'from agents.tools import BatchEnv, ParallelBatchEnv, wrappers\n'
        'import agents.tools.envs.ray, agents.tools.batch_env, agents.tools.wrappers\n'
        'from agents.tools.envs import BACKENDS, EnvpoolBatchEnv, ProcessBatchEnv, RayBatchEnv\n'
        'assert "tensorflow" not in sys.modules, "hosting imported TensorFlow"\n'
        'assert "ray" not in sys.modules, "hosting imported Ray before it was used"\n'
        'assert "envpool" not in sys.modules, "hosting imported envpool before it was used"\n')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=testing.REPOSITORY)


def test_original_import_paths_still_work():
    from agents.tools.batch_env import BatchEnv
    from agents.tools.in_graph_batch_env import InGraphBatchEnv
    from agents.tools.mock_environment import MockEnvironment
    from agents.tools.wrappers import ExternalProcess
    assert BatchEnv is tools.BatchEnv is tools.envs.BatchEnv
    assert ExternalProcess is tools.envs.ExternalProcess
    assert InGraphBatchEnv is tools.InGraphBatchEnv
    assert MockEnvironment is tools.MockEnvironment
    assert callable(tools.simulate) and callable(tools.count_weights)


def test_gives_access_to_its_environments_and_their_attributes():
    envs = [gym.make('Pendulum-v1') for _ in range(3)]
    batch = batch_env.BatchEnv(envs, blocking=True)
    assert batch[1] is envs[1]
    assert batch.spec.id == 'Pendulum-v1'  # Read from the first environment.
    with pytest.raises(AttributeError):
        batch._no_such_private_attribute


def test_an_error_in_one_worker_is_raised_after_all_have_answered():
    constructors = [functools.partial(testing.CountingEnv, fail_at_step=1), testing.CountingEnv]
    with process.ProcessBatchEnv(constructors) as batch:
        batch.reset()
        with pytest.raises(errors.WorkerError, match='step 1 failed'):
            batch.step([0, 0])
        assert batch[1].count == 1  # Its step was collected, not left pending.
        np.testing.assert_array_equal(batch.reset()[0], np.zeros((2, 2)))
