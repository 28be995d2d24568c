"""Tests of what ParallelBatchEnv adds to the batch contract (see contract_test.py)."""

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

from agents.tools.envs import errors
from agents.tools.envs import parallel
from agents.tools.envs import testing


def _make_pendulum():
    return gym.make('Pendulum-v1', max_episode_steps=13)


def _shared_memory_path(batch):
    return os.path.join('/dev/shm', batch._resources.shared.name)


def _worker_processes():
    return [process for process in multiprocessing.active_children()
            if process.name.startswith('ParallelBatchEnv-worker')]


@pytest.mark.parametrize('size, num_workers, step_in_parent, parent_envs', [
    (5, 1, True, 2),
    (5, 2, False, 0),
    (5, 2, True, 1),
    (2, 3, False, 0),
])
def test_environments_are_split_between_workers_and_parent(
        size, num_workers, step_in_parent, parent_envs):
    batch = parallel.ParallelBatchEnv(
        [_make_pendulum] * size, num_workers=num_workers, step_in_parent=step_in_parent)
    try:
        assert batch.num_parent_envs == parent_envs
        assert batch.num_workers == min(num_workers, size - parent_envs)
        assert len(set(batch.worker_pids)) == batch.num_workers
    finally:
        batch.close()


def _run_commands(batch, plan):
    """The results of a batch for a plan of (pause in seconds, call, arguments)."""
    results = [batch.reset()[0]]
    for pause, call, arguments in plan:
        time.sleep(pause)
        if call == 'step':
            results.append(batch.step(*arguments)[:4])
        elif call == 'reset':
            results.append(batch.reset(indices=arguments[0])[0])
        else:
            results.append(batch.call('state'))
    return results


def test_workers_that_poll_sleep_or_both_by_turns_give_the_same_results():
    rng = np.random.default_rng(0)
    plan = []
    for _ in range(150):
        # Pauses around the polling budget below make workers poll in some
        # waits and sleep in others, so commands come as they go to sleep.
        pause = rng.choice([0.0, rng.uniform(0.0, 3e-4)])
        call = rng.choice(['step', 'step', 'step some', 'reset', 'call'])
        indices = sorted(rng.choice(4, size=rng.integers(1, 4), replace=False).tolist())
        if call == 'step':
            arguments = (rng.uniform(-2, 2, (4, 1)).astype(np.float32),)
        elif call == 'step some':
            call, arguments = 'step', (
                rng.uniform(-2, 2, (len(indices), 1)).astype(np.float32), indices)
        else:
            arguments = (indices,)
        plan.append((pause, call, arguments))
    results = []
    for spin_seconds in (0.0, 60.0, 1e-4):
        batch = parallel.ParallelBatchEnv(
            [_make_pendulum] * 4, num_workers=2, seeds=range(4), spin_seconds=spin_seconds)
        try:
            results.append(_run_commands(batch, plan))
        finally:
            batch.close()
    testing.assert_identical(results[1], results[0])
    testing.assert_identical(results[2], results[0])
    with pytest.raises(ValueError, match='spin_seconds'):
        parallel.ParallelBatchEnv([_make_pendulum], spin_seconds=-1)


def _large_array(env, size):
    del env
    return np.arange(size, dtype=np.float64)


def test_replies_larger_than_a_pipe_reach_the_parent():
    batch = parallel.ParallelBatchEnv([_make_pendulum] * 4, num_workers=2, timeout=30)
    try:
        size = 1 << 16  # 512 KiB per environment, a megabyte per worker's reply.
        arrays = batch.apply(_large_array, size)
        assert len(arrays) == 4
        for array in arrays:
            np.testing.assert_array_equal(array, np.arange(size, dtype=np.float64))
    finally:
        batch.close()


def test_step_infos_of_one_schema_come_back_exactly_through_shared_columns():
    # Hopper's infos are NumPy scalars under the same keys at every step; steps
    # that end an episode carry reset infos too and are pickled instead.
    make = testing.SHORT_TASKS['Hopper-v5']
    size, seeds = 4, [3, 4, 5, 6]
    batch = parallel.ParallelBatchEnv([make] * size, num_workers=2, seeds=seeds)
    references = [make() for _ in range(size)]
    rng = np.random.default_rng(0)
    try:
        batch.reset()
        for env, seed in zip(references, seeds):
            env.reset(seed=seed)
        for step in range(60):
            some = step % 3 == 2
            indices = [1, 2] if some else list(range(size))
            actions = rng.uniform(-1, 1, (len(indices), 3)).astype(np.float32)
            _, _, terminated, truncated, infos = batch.step(
                actions, indices=indices if some else None)
            for index, action, info in zip(indices, actions, infos):
                _, _, *ended, expected = references[index].step(action)
                testing.assert_identical(info, expected, f'step {step}, environment {index}')
                if any(ended):
                    references[index].reset()
            ended = np.asarray(indices)[terminated | truncated]
            if len(ended):
                batch.reset(ended.tolist())
        columns_path = os.path.join('/dev/shm', batch._info_columns.name)
        assert os.path.exists(columns_path)
    finally:
        batch.close()
        for env in references:
            env.close()
    assert not os.path.exists(columns_path)


def test_a_later_timeout_names_only_the_hung_environment_not_one_that_raised():
    batch = parallel.ParallelBatchEnv([
        functools.partial(testing.CountingEnv, fail_at_step=1),
        functools.partial(testing.CountingEnv, step_delay=5.0)], num_workers=1, timeout=1.0)
    try:
        batch.reset()
        with pytest.raises(errors.WorkerError, match='ValueError'):
            batch.step([0], indices=[0])
        with pytest.raises(errors.WorkerTimeoutError) as caught:
            batch.step([0], indices=[1])
    finally:
        batch.close()
    assert 'in environment 1 (' in str(caught.value)
    assert 'environment 0 (' not in str(caught.value)


def test_seeds_given_at_construction_apply_to_the_first_reset():
    batch = parallel.ParallelBatchEnv([_make_pendulum] * 3, num_workers=1, seeds=[4, 5, 6])
    try:
        np.testing.assert_array_equal(
            batch.reset()[0], [_make_pendulum().reset(seed=seed)[0] for seed in [4, 5, 6]])
    finally:
        batch.close()
    with pytest.raises(ValueError, match='one seed'):
        parallel.ParallelBatchEnv([_make_pendulum], seeds=[1, 2])
    with pytest.raises(TypeError, match='callable'):
        parallel.ParallelBatchEnv([_make_pendulum()])


def test_infos_automatic_resets_attributes_and_call():
    constructors = [functools.partial(
        testing.CountingEnv, observation_space=gym.spaces.Discrete(100))] * 3
    batch = parallel.ParallelBatchEnv(constructors, num_workers=1, step_in_parent=True)
    try:
        assert batch.num_parent_envs == 1
        observ, infos = batch.reset(options={'level': 1})
        assert observ.dtype == np.int64 and observ.shape == (3,)
        assert infos == ({'options': {'level': 1}},) * 3
        for step in range(1, 5):
            observ, reward, terminated, _, infos = batch.step([0, 1, 2])
            np.testing.assert_array_equal(observ, [step] * 3)
            np.testing.assert_array_equal(reward, [step] * 3)
            # Infos cross the pipe only for steps that return some.
            expected = {'count': step, 'half': step / 2} if step % 2 == 0 else {}
            assert infos == (expected,) * 3
        assert type(infos[2]['half']) is np.float32
        assert terminated.all()
        # The automatic reset's info is handed out with its first observation.
        observ, infos = batch.reset([2, 0])
        np.testing.assert_array_equal(observ, [0, 0])
        assert infos == ({'options': None},) * 2
        # Options ask for a real reset, also of an environment reset automatically.
        assert batch.reset([1], options={'level': 2})[1] == ({'options': {'level': 2}},)
        assert batch.call('observation_space') == [gym.spaces.Discrete(100)] * 3
        assert batch.call('reset', seed=1)[2] == (0, {'options': None})
        # Attributes of single environments, in the parent or in a worker.
        assert batch[0].action_space == batch[2].action_space == gym.spaces.Discrete(3)
        assert batch[2].resets == 3
        assert batch.np_random_seed == 1  # Forwarded to the first environment.
        assert not hasattr(batch[2], 'no_such_attribute')
    finally:
        batch.close()


def test_without_infos_nothing_but_arrays_leaves_the_workers():
    uint8_space = gym.spaces.Box(0, 255, (2, 2), np.uint8)
    batch = parallel.ParallelBatchEnv(
        [functools.partial(testing.CountingEnv, observation_space=uint8_space)] * 2,
        num_workers=1, return_infos=False)
    try:
        observ, infos = batch.reset()
        assert observ.dtype == np.uint8 and observ.shape == (2, 2, 2)
        assert infos == ({}, {})
        batch.step([2, 2])
        observ, _, _, _, infos = batch.step([2, 2])
        np.testing.assert_array_equal(observ, np.full((2, 2, 2), 2))
        assert infos == ({}, {})
    finally:
        batch.close()


def test_exception_in_worker_carries_its_type_and_traceback():
    constructors = [functools.partial(testing.CountingEnv, fail_at_step=2)] * 2
    batch = parallel.ParallelBatchEnv(constructors, num_workers=1, step_in_parent=False)
    try:
        batch.reset()
        batch.step([0, 0])
        with pytest.raises(errors.WorkerError, match='ValueError') as caught:
            batch.step([0, 0])
        assert 'environment worker 0' in str(caught.value)
        assert 'in step' in caught.value.remote_traceback
        assert caught.value.exception_type == 'ValueError'
    finally:
        batch.close()


def test_exception_in_constructor_leaves_no_workers():
    def broken():
        raise KeyError('no such level')

    with pytest.raises(errors.WorkerError, match='no such level'):
        parallel.ParallelBatchEnv([_make_pendulum, broken], num_workers=1)
    assert not _worker_processes()


def test_killed_worker_gives_error_quickly_and_cleans_up():
    batch = parallel.ParallelBatchEnv([_make_pendulum] * 4, num_workers=2)
    shared_memory = _shared_memory_path(batch)
    pids = batch.worker_pids
    batch.reset()
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(errors.WorkerDiedError, match='killed by signal SIGKILL'):
        batch.step(np.zeros((4, 1), np.float32))
    assert time.monotonic() - start < 10
    assert not any(testing.is_running(pid) for pid in pids)
    assert not os.path.exists(shared_memory)
    with pytest.raises(RuntimeError, match='closed'):
        batch.reset()
    batch.close()


def test_close_ends_workers_and_frees_shared_memory():
    batch = parallel.ParallelBatchEnv([_make_pendulum] * 3, num_workers=2)
    shared_memory = _shared_memory_path(batch)
    assert os.path.exists(shared_memory)
    # The countdown's lock, a named semaphore.
    semaphore = '/dev/shm/sem.' + batch._countdown._lock._semlock.name.lstrip('/')
    assert os.path.exists(semaphore)
    pids = batch.worker_pids
    assert all(testing.is_running(pid) for pid in pids)
    batch.close()
    batch.close()
    assert not any(testing.is_running(pid) for pid in pids)
    assert not os.path.exists(shared_memory)
    assert not os.path.exists(semaphore)
    with pytest.raises(RuntimeError, match='closed'):
        batch.step(np.zeros((3, 1), np.float32))


def _run_script(body):
    """Run a script that creates a ParallelBatchEnv and then runs `body`.

    Returns:
      The process, the path of the shared memory and the worker pids.
    """
    script = textwrap.dedent('''
        import gymnasium
        from agents.tools.envs import ParallelBatchEnv
        if __name__ == '__main__':
            batch = ParallelBatchEnv(
                [lambda: gymnasium.make('Pendulum-v1')] * 2, num_workers=2,
                step_in_parent=False)
            print(batch._resources.shared.name, *batch.worker_pids, flush=True)
    ''') + textwrap.indent(textwrap.dedent(body), ' ' * 4)
    process = subprocess.Popen(
        [sys.executable, '-c', script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONPATH=testing.REPOSITORY))
    line = process.stdout.readline()
    if not line:
        raise AssertionError(f'The script failed: {process.communicate()[1]}')
    name, *pids = line.split()
    return process, os.path.join('/dev/shm', name), [int(pid) for pid in pids]


def test_exit_without_close_leaves_no_processes_or_memory():
    process, shared_memory, pids = _run_script('batch.reset()\n')
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert len(pids) == 2 and testing.wait_until_gone(pids)
    assert 'leaked' not in stderr
    assert not os.path.exists(shared_memory)


def test_workers_exit_when_parent_is_killed():
    process, _, pids = _run_script('import time; time.sleep(60)\n')
    try:
        assert len(pids) == 2
        process.kill()
        process.wait(timeout=10)
        assert testing.wait_until_gone(pids)
    finally:
        process.kill()
        process.communicate()
