"""Tests for ParallelBatchEnv: same results as in-process stepping, and fault handling."""

import functools
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest

from agents.tools import parallel_batch_env
from agents.tools import wrappers


class _CountingEnv(gym.Env):
    """Discrete observations counting steps; raises at a chosen step; returns infos."""

    def __init__(self, fail_at_step=None, observation_space=None):
        self.observation_space = observation_space or gym.spaces.Discrete(100)
        self.action_space = gym.spaces.Discrete(3)
        self._fail_at_step = fail_at_step
        self._count = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        return self._observe(), {'reset_with': options}

    def step(self, action):
        self._count += 1
        if self._count == self._fail_at_step:
            raise ValueError(f'step {self._count} failed on purpose')
        info = {'action': int(action), 'half': np.float32(action) / 2} if action == 2 else {}
        return self._observe(), float(action), self._count >= 4, False, info

    def _observe(self):
        if isinstance(self.observation_space, gym.spaces.Discrete):
            return self._count
        return np.full(self.observation_space.shape, self._count, self.observation_space.dtype)


def _make_pendulum():
    return gym.make('Pendulum-v1', max_episode_steps=13)


def _make_cartpole():
    return gym.make('CartPole-v1')


def _shared_memory_path(batch):
    return os.path.join('/dev/shm', batch._resources.shared.name)


def _worker_processes():
    return [process for process in multiprocessing.active_children()
            if process.name.startswith('ParallelBatchEnv-worker')]


def _is_running(pid):
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().split(')')[-1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def _step_in_process(envs, actions):
    results = [env.step(action) for env, action in zip(envs, actions)]
    observ, reward, terminated, truncated, _ = zip(*results)
    return (np.stack(observ), np.asarray(reward, np.float32), np.asarray(terminated),
            np.asarray(truncated))


@pytest.mark.parametrize('make_env, num_workers, step_in_parent', [
    (_make_pendulum, 1, True),
    (_make_pendulum, 2, False),
    (_make_cartpole, 2, True),
    (_make_cartpole, 3, False),
])
def test_matches_in_process_stepping_with_same_seeds(make_env, num_workers, step_in_parent):
    size, steps = 5, 60
    seeds = list(range(10, 10 + size))
    batch = parallel_batch_env.ParallelBatchEnv(
        [make_env] * size, num_workers=num_workers, step_in_parent=step_in_parent, seeds=seeds)
    expected_envs = [make_env() for _ in range(size)]
    try:
        assert batch.num_workers == num_workers
        assert batch.num_parent_envs == (size // (num_workers + 1) if step_in_parent else 0)
        observ, _ = batch.reset()
        expected = np.stack([env.reset(seed=seed)[0] for env, seed in zip(expected_envs, seeds)])
        np.testing.assert_array_equal(observ, expected)
        actions = np.stack([[batch.action_space.sample() for _ in range(size)]
                            for _ in range(steps)])
        finished_episodes = 0
        for step_actions in actions:
            result = batch.step(step_actions)
            expected = _step_in_process(expected_envs, step_actions)
            for value, expected_value in zip(result[:4], expected):
                np.testing.assert_array_equal(value, expected_value)
                assert value.dtype == expected_value.dtype
            done = np.flatnonzero(result[2] | result[3])
            finished_episodes += len(done)
            if len(done):
                observ, _ = batch.reset(done)
                expected = np.stack([expected_envs[index].reset()[0] for index in done])
                np.testing.assert_array_equal(observ, expected)
        assert finished_episodes >= size
    finally:
        batch.close()


def test_reset_of_subsets_seeds_and_options():
    batch = parallel_batch_env.ParallelBatchEnv(
        [_make_pendulum] * 4, num_workers=2, seeds=[0, 1, 2, 3])
    try:
        first, _ = batch.reset()
        again, _ = batch.reset(np.array([3, 1]), seeds=np.array([3, 1]))
        np.testing.assert_array_equal(again, first[[3, 1]])
        assert batch.reset([])[0].shape == (0, 3)
        other, _ = batch.reset([2], seeds=[7])
        np.testing.assert_array_equal(other[0], _make_pendulum().reset(seed=7)[0])
        with pytest.raises(ValueError, match='index 4 is out of range'):
            batch.reset([4])
        with pytest.raises(ValueError, match='2 seeds for 1'):
            batch.reset([0], seeds=[1, 2])
    finally:
        batch.close()


def test_discrete_and_integer_observations_infos_and_call():
    uint8_space = gym.spaces.Box(0, 255, (2, 2), np.uint8)
    constructors = [_CountingEnv] * 2 + [
        functools.partial(_CountingEnv, observation_space=gym.spaces.Discrete(100))]
    batch = parallel_batch_env.ParallelBatchEnv(constructors, num_workers=1, step_in_parent=True)
    try:
        assert batch.num_parent_envs == 1
        observ, infos = batch.reset(options={'level': 1})
        assert observ.dtype == np.int64 and observ.shape == (3,)
        assert infos == ({'reset_with': {'level': 1}},) * 3
        for step in range(1, 5):
            observ, reward, terminated, _, infos = batch.step([0, 1, 2])
            np.testing.assert_array_equal(observ, [step] * 3)
            np.testing.assert_array_equal(reward, [0, 1, 2])
            assert infos == ({}, {}, {'action': 2, 'half': 1.0})
            assert type(infos[2]['half']) is np.float32
        assert terminated.all()
        # The automatic reset's info is handed out with its first observation.
        observ, infos = batch.reset([2, 0])
        np.testing.assert_array_equal(observ, [0, 0])
        assert infos == ({'reset_with': None},) * 2
        # Options ask for a real reset, also of an environment reset automatically.
        assert batch.reset([1], options={'level': 2})[1] == ({'reset_with': {'level': 2}},)
        assert batch.call('observation_space') == [gym.spaces.Discrete(100)] * 3
        assert batch.call('reset', seed=1)[2] == (0, {'reset_with': None})
        # Attributes of single environments, in the parent or in a worker.
        assert batch[0].action_space == batch[2].action_space == gym.spaces.Discrete(3)
        assert batch.observation_space == gym.spaces.Discrete(100)
        assert batch.np_random_seed == 1  # Forwarded to the first environment.
        assert not hasattr(batch[2], 'no_such_attribute')
    finally:
        batch.close()
    batch = parallel_batch_env.ParallelBatchEnv(
        [functools.partial(_CountingEnv, observation_space=uint8_space)] * 2, num_workers=1,
        return_infos=False)
    try:
        observ, infos = batch.reset()
        assert observ.dtype == np.uint8 and observ.shape == (2, 2, 2)
        assert infos == ({}, {})
        observ, _, _, _, infos = batch.step([2, 2])
        np.testing.assert_array_equal(observ, np.ones((2, 2, 2)))
        assert infos == ({}, {})
    finally:
        batch.close()


def test_bad_actions_and_spaces_give_clear_errors():
    with pytest.raises(ValueError, match='same observation space'):
        parallel_batch_env.ParallelBatchEnv([_make_pendulum, _make_cartpole], num_workers=1)
    with pytest.raises(ValueError, match='one seed'):
        parallel_batch_env.ParallelBatchEnv([_make_pendulum], seeds=[1, 2])
    with pytest.raises(TypeError, match='callable'):
        parallel_batch_env.ParallelBatchEnv([_make_pendulum()])
    batch = parallel_batch_env.ParallelBatchEnv([_make_pendulum] * 3, num_workers=1)
    try:
        batch.reset()
        with pytest.raises(ValueError, match=r'one action per environment \(3\), got a batch of 2'):
            batch.step(np.zeros((2, 1), np.float32))
        with pytest.raises(ValueError, match=r'shape \(1,\)'):
            batch.step(np.zeros((3, 2), np.float32))
        batch.step(np.zeros((3, 1), np.float32))  # Still usable.
    finally:
        batch.close()
    batch = parallel_batch_env.ParallelBatchEnv([_make_cartpole] * 2, num_workers=1)
    try:
        with pytest.raises(TypeError, match='integer actions'):
            batch.step([0.5, 1.0])
    finally:
        batch.close()


def test_exception_in_worker_is_raised_with_traceback():
    constructors = [functools.partial(_CountingEnv, fail_at_step=2)] * 2
    batch = parallel_batch_env.ParallelBatchEnv(constructors, num_workers=1, step_in_parent=False)
    try:
        batch.reset()
        batch.step([0, 0])
        with pytest.raises(wrappers.WorkerError, match='ValueError') as caught:
            batch.step([0, 0])
        assert 'step 2 failed on purpose' in str(caught.value)
        assert 'in step' in caught.value.remote_traceback
        assert caught.value.exception_type == 'ValueError'
        # The worker survives; a reset makes the batch usable again.
        batch.reset()
        batch.step([0, 0])
    finally:
        batch.close()


def test_exception_in_constructor_is_raised_and_nothing_leaks():
    def broken():
        raise KeyError('no such level')

    with pytest.raises(wrappers.WorkerError, match='no such level'):
        parallel_batch_env.ParallelBatchEnv([_make_pendulum, broken], num_workers=1)
    assert not _worker_processes()


def test_killed_worker_gives_error_quickly_and_cleans_up():
    batch = parallel_batch_env.ParallelBatchEnv([_make_pendulum] * 4, num_workers=2)
    shared_memory = _shared_memory_path(batch)
    pids = batch.worker_pids
    batch.reset()
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(wrappers.WorkerDiedError, match='killed by signal SIGKILL'):
        batch.step(np.zeros((4, 1), np.float32))
    assert time.monotonic() - start < 10
    assert not any(_is_running(pid) for pid in pids)
    assert not os.path.exists(shared_memory)
    with pytest.raises(RuntimeError, match='closed'):
        batch.reset()
    batch.close()


def test_close_ends_workers_and_frees_shared_memory():
    batch = parallel_batch_env.ParallelBatchEnv([_make_pendulum] * 3, num_workers=2)
    shared_memory = _shared_memory_path(batch)
    assert os.path.exists(shared_memory)
    pids = batch.worker_pids
    assert all(_is_running(pid) for pid in pids)
    batch.close()
    batch.close()
    assert not any(_is_running(pid) for pid in pids)
    assert not os.path.exists(shared_memory)
    with pytest.raises(RuntimeError, match='closed'):
        batch.step(np.zeros((3, 1), np.float32))


def _run_script(body):
    """Run a script that creates a ParallelBatchEnv and then runs `body`.

    Returns:
      The process, the path of the shared memory and the worker pids.
    """
    script = textwrap.dedent('''
        import gymnasium
        from agents.tools.parallel_batch_env import ParallelBatchEnv
        if __name__ == '__main__':
            batch = ParallelBatchEnv(
                [lambda: gymnasium.make('Pendulum-v1')] * 2, num_workers=2,
                step_in_parent=False)
            print(batch._resources.shared.name, *batch.worker_pids, flush=True)
    ''') + textwrap.indent(textwrap.dedent(body), ' ' * 4)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    process = subprocess.Popen(
        [sys.executable, '-c', script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONPATH=root))
    line = process.stdout.readline()
    if not line:
        raise AssertionError(f'The script failed: {process.communicate()[1]}')
    name, *pids = line.split()
    return process, os.path.join('/dev/shm', name), [int(pid) for pid in pids]


def _wait_until_gone(pids, timeout=10):
    deadline = time.monotonic() + timeout
    while any(_is_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_is_running(pid) for pid in pids)


def test_exit_without_close_leaves_no_processes_or_memory():
    process, shared_memory, pids = _run_script('batch.reset()\n')
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert len(pids) == 2 and _wait_until_gone(pids)
    assert 'leaked' not in stderr
    assert not os.path.exists(shared_memory)


def test_workers_exit_when_parent_is_killed():
    process, _, pids = _run_script('import time; time.sleep(60)\n')
    try:
        assert len(pids) == 2
        process.kill()
        process.wait(timeout=10)
        assert _wait_until_gone(pids)
    finally:
        process.kill()
        process.communicate()
