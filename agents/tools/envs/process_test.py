"""Tests of ExternalProcess and of the process backend beyond the batch contract."""

import functools
import os
import signal
import subprocess
import sys
import threading
import time

import gymnasium
import numpy as np
import pytest

from agents.tools import wrappers
from agents.tools.envs import errors
from agents.tools.envs import process
from agents.tools.envs import testing


class _ExitingEnv(testing.CountingEnv):
    """Ends its process in `step`, as a crashing native library would."""

    def step(self, action):
        os._exit(3)


def test_external_process_matches_local_env_after_tensorflow_import():
    import tensorflow  # noqa: F401  The start method must be safe after this import.
    external = process.ExternalProcess(lambda: gymnasium.make('Pendulum-v1'))
    local = gymnasium.make('Pendulum-v1')
    try:
        assert external.observation_space == local.observation_space
        assert external.action_space == local.action_space
        observ, _ = external.reset(seed=5)
        expected_observ, _ = local.reset(seed=5)
        np.testing.assert_allclose(observ, expected_observ)
        for action in np.linspace(-2, 2, 5, dtype=np.float32):
            observ, reward, terminated, truncated, _ = external.step([action])
            expected = local.step([action])
            np.testing.assert_allclose(observ, expected[0])
            assert reward == pytest.approx(expected[1])
            assert (terminated, truncated) == expected[2:4]
    finally:
        external.close()


def test_promises_step_workers_in_parallel_and_resolve_in_any_order():
    envs = [
        process.ExternalProcess(functools.partial(
            testing.CountingEnv, length=index + 1, step_delay=1.0))
        for index in range(3)]
    try:
        for promise in [env.reset(blocking=False) for env in envs]:
            assert promise()[1] == {'options': None}
        promises = [env.step([0.0], blocking=False) for env in envs]
        results = [promise() for promise in reversed(promises)][::-1]
        starts, ends = zip(*[env.step_times[0] for env in envs])
        assert max(starts) < min(ends)  # Every worker stepped while the others did.
        assert [terminated for _, _, terminated, _, _ in results] == [True, False, False]
        with pytest.raises(RuntimeError, match='already resolved'):
            promises[0]()
        # Responses to earlier requests are kept until their promise is called.
        env = envs[2]
        first, second = env.step([0.0], blocking=False), env.step([0.0], blocking=False)
        assert env.call('scaled_count', 10) == 30
        assert second()[1] == 3.0 and first()[1] == 2.0
    finally:
        for env in envs:
            env.close()


def test_attributes_and_methods_are_forwarded_through_wrappers():
    def constructor():
        env = testing.CountingEnv(length=100, action_space=gymnasium.spaces.Box(0.0, 4.0, (1,)))
        return wrappers.ConvertTo32Bit(wrappers.RangeNormalize(wrappers.LimitDuration(env, 2)))

    with process.ExternalProcess(constructor) as env:
        assert env.length == 100
        assert env.access('length') == 100
        assert not hasattr(env, 'no_such_attribute')
        assert env.observation_space.dtype == np.float32
        assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        env.reset(seed=0)
        observ, reward, _, truncated, _ = env.step([1.0])
        assert observ.dtype == np.float32 and isinstance(reward, np.float32)
        assert not truncated
        assert env.step([1.0])[3]
        assert env.scaled_count(3) == 6
        assert env.call('scaled_count', factor=2) == 4
        np.testing.assert_allclose(env.actions, [[4.0], [4.0]])


def test_worker_exception_reaches_caller_with_traceback():
    with process.ExternalProcess(functools.partial(testing.CountingEnv, fail_at_step=1)) as env:
        env.reset()
        with pytest.raises(errors.WorkerError) as raised:
            env.step(0)
        message = str(raised.value)
        assert 'ValueError: step 1 failed on purpose' in message
        assert 'Traceback (most recent call last)' in message
        assert 'raise ValueError(' in message and 'testing.py' in message
        assert raised.value.exception_type == 'ValueError'
        # The worker keeps serving requests after an exception.
        assert env.count == 0
        assert env.reset()[1] == {'options': None}


def test_failing_constructor_is_reported_by_every_request():
    with process.ExternalProcess(lambda: gymnasium.make('NoSuchEnvironment-v0')) as env:
        for _ in range(2):
            with pytest.raises(errors.WorkerError, match='NoSuchEnvironment'):
                env.reset()


def test_killed_worker_raises_clear_error_quickly():
    env = process.ExternalProcess(testing.CountingEnv)
    env.reset()
    os.kill(env.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(errors.WorkerDiedError, match='killed by signal SIGKILL'):
        env.step([0.0])
    with pytest.raises(errors.WorkerDiedError):
        env.reset()
    assert time.monotonic() - start < 10
    env.close()


def test_worker_exiting_during_step_raises_clear_error():
    env = process.ExternalProcess(_ExitingEnv)
    try:
        with pytest.raises(errors.WorkerDiedError, match='exited with code 3 while calling'):
            env.step([0.0])
    finally:
        env.close()


def test_close_ends_worker_and_is_idempotent():
    env = process.ExternalProcess(testing.CountingEnv)
    pid = env.pid
    env.reset()
    env.close()
    env.close()
    assert not testing.is_running(pid)
    with pytest.raises(RuntimeError, match='closed'):
        env.reset()


def test_close_terminates_worker_that_does_not_exit_in_time():
    env = process.ExternalProcess(functools.partial(testing.CountingEnv, close_delay=60))
    pid = env.pid
    env.reset()
    start = time.monotonic()
    env.close(timeout=0.5)
    assert time.monotonic() - start < 5
    assert not testing.is_running(pid)


@pytest.mark.parametrize('exit_statement', ['pass', 'os._exit(0)'])
def test_worker_ends_when_parent_exits_without_closing(exit_statement):
    # os._exit skips the atexit hook, so the worker must notice EOF on its pipe.
    script = (
        'import os, gymnasium\n'
        'from agents.tools.envs import ExternalProcess\n'
        "env = ExternalProcess(lambda: gymnasium.make('Pendulum-v1'))\n"
        'env.reset()\n'
        'print(env.pid, flush=True)\n'
        f'{exit_statement}\n')
    result = subprocess.run(
        [sys.executable, '-c', script], cwd=testing.REPOSITORY, capture_output=True, text=True,
        timeout=60, env=dict(os.environ, PYTHONPATH=testing.REPOSITORY))
    assert result.returncode == 0, result.stderr
    assert testing.wait_until_gone([int(result.stdout)], timeout=5)


def test_external_process_rejects_bad_constructors():
    with pytest.raises(TypeError, match='callable'):
        process.ExternalProcess(testing.CountingEnv())
    lock = threading.Lock()
    with pytest.raises(TypeError, match='cloudpickle'):
        process.ExternalProcess(lambda: lock)


def test_process_batch_closes_itself_when_a_worker_dies():
    batch = process.ProcessBatchEnv([testing.CountingEnv] * 3)
    pids = [env.pid for env in batch]
    batch.reset()
    os.kill(pids[1], signal.SIGKILL)
    with pytest.raises(errors.WorkerDiedError, match='killed by signal SIGKILL'):
        batch.step([0, 0, 0])
    assert batch.closed
    assert testing.wait_until_gone(pids)

