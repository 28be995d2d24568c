"""Tests for environments hosted in Ray actors, against a real local Ray instance."""

import os
import signal
import subprocess
import sys
import time

import gymnasium
import numpy as np
import pytest

from agents.tools.envs import batch_env
from agents.tools.envs import ray as ray_env
from agents.tools.envs import testing


@pytest.fixture
def ray(ray_cluster):
    """The Ray module, connected to the local instance of the hosting tests."""
    return ray_cluster


class _ReportsProcess(gymnasium.Wrapper):
    """Adds a method that tells in which process the environment lives."""

    def pid(self):
        return os.getpid()


class _RefusesLargeActions(gymnasium.Wrapper):
    """Raises from `step` when the action exceeds 1."""

    def step(self, action):
        if action[0] > 1:
            raise ValueError(f'Refusing action {action[0]}.')
        return self.env.step(action)


def _pendulum():
    return _ReportsProcess(gymnasium.make('Pendulum-v1'))


def _pendulum_refusing_large_actions():
    return _RefusesLargeActions(gymnasium.make('Pendulum-v1'))


def _broken_constructor():
    raise KeyError('missing asset')


def _alive_actors(ray):
    """Ids of the actors not dead yet, read from Ray's control store."""
    # ray.util.state.list_actors needs the dashboard, which the tests leave out.
    from ray._private import state  # pylint: disable=import-outside-toplevel
    return {actor_id for actor_id, actor in state.actors().items() if actor['State'] != 'DEAD'}


def _assert_all_released(ray):
    """Check that no actor and no placement group is left."""
    deadline = time.monotonic() + 10
    while _alive_actors(ray) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive_actors(ray)
    states = {group['state'] for group in ray.util.placement_group_table().values()}
    assert states <= {'REMOVED'}


@pytest.mark.integration
@pytest.mark.parametrize('envs_per_actor, placement', [(1, 'spread'), (2, 'pack')])
def test_batch_env_matches_in_process_envs(ray, envs_per_actor, placement):
    num_envs = 3  # With two envs per actor, the last actor hosts only one.
    seeds = [3, 5, 7]
    remote = batch_env.BatchEnv(
        ray_env.ray_environments(
            [_pendulum] * num_envs, envs_per_actor=envs_per_actor, num_cpus_per_actor=0.5,
            placement=placement),
        blocking=False)
    local = batch_env.BatchEnv([_pendulum() for _ in range(num_envs)], blocking=True)
    try:
        assert remote.observation_space == local.observation_space
        assert remote.action_space == local.action_space
        np.testing.assert_array_equal(remote.reset(seeds=seeds)[0], local.reset(seeds=seeds)[0])
        actions = np.random.default_rng(0).uniform(-2, 2, (30, num_envs, 1)).astype(np.float32)
        for step, action in enumerate(actions):
            for remote_part, local_part in zip(remote.step(action), local.step(action)):
                if isinstance(local_part, np.ndarray):
                    np.testing.assert_array_equal(remote_part, local_part)
            if step == 10:  # Partial batches: one env of an actor resets.
                np.testing.assert_array_equal(remote.reset([1])[0], local.reset([1])[0])
    finally:
        remote.close()
        local.close()
    _assert_all_released(ray)


@pytest.mark.integration
def test_single_environment_interface(ray):
    first, second = ray_env.ray_environments(
        [_pendulum] * 2, envs_per_actor=2, num_cpus_per_actor=0.5)
    try:
        assert first.call('pid') == second.call('pid')  # Both live in one actor.
        assert first.spec.id == 'Pendulum-v1'
        assert first.pid() == first.call('pid')  # Callable attributes are forwarded.
        with pytest.raises(AttributeError, match='no_such_attribute'):
            first.access('no_such_attribute')
        observ, info = first.reset(seed=1)
        assert first.observation_space.contains(observ)
        assert isinstance(info, dict)
        assert len(first.step(np.zeros(1, np.float32))) == 5
        # Promises may be resolved in any order, and one env may queue two steps.
        reset_second = second.reset(seed=2, blocking=False)
        step_first = first.step(np.ones(1, np.float32), blocking=False)
        step_first_again = first.step(np.ones(1, np.float32), blocking=False)
        assert step_first_again()[0].shape == (3,)
        assert reset_second()[0].shape == (3,)
        assert step_first()[0].shape == (3,)
    finally:
        first.close()
        first.close()
        with pytest.raises(RuntimeError, match='closed'):
            first.step(np.zeros(1, np.float32))
        second.close()
    _assert_all_released(ray)


@pytest.mark.integration
def test_remote_exception_carries_type_and_traceback(ray):
    envs = ray_env.ray_environments(
        [_pendulum_refusing_large_actions] * 2, envs_per_actor=2, num_cpus_per_actor=0.5)
    try:
        for env in envs:
            env.reset(seed=0)
        refused = envs[0].step(np.full(1, 2, np.float32), blocking=False)
        accepted = envs[1].step(np.zeros(1, np.float32), blocking=False)
        with pytest.raises(ray_env.RayEnvironmentError, match='ValueError: Refusing') as info:
            refused()
        assert info.value.exception_type == 'ValueError'
        assert 'ray_test.py' in info.value.remote_traceback
        assert 'ray_test.py' in str(info.value)
        assert accepted()[0].shape == (3,)  # The other env of the actor is unaffected.
        assert envs[0].step(np.zeros(1, np.float32))[0].shape == (3,)
    finally:
        for env in envs:
            env.close()
    _assert_all_released(ray)


@pytest.mark.integration
def test_constructor_exception_is_reported(ray):
    with pytest.raises(ray_env.RayEnvironmentError, match='missing asset') as info:
        ray_env.ray_environments(
            [_pendulum, _broken_constructor], envs_per_actor=1, num_cpus_per_actor=0.5)
    assert info.value.exception_type == 'KeyError'
    assert 'environment 1' in str(info.value)
    _assert_all_released(ray)


@pytest.mark.integration
def test_killed_actor_raises_within_seconds(ray):
    envs = ray_env.ray_environments([_pendulum] * 2, envs_per_actor=2, num_cpus_per_actor=0.5)
    batch = batch_env.BatchEnv(envs, blocking=False)
    batch.reset(seeds=[0, 1])
    os.kill(envs[0].call('pid'), signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(ray_env.RayActorDiedError, match='restart_on_failure'):
        batch.step(np.zeros((2, 1), np.float32))
    assert time.monotonic() - start < 10
    assert batch.closed  # A dead worker closes the batch and every actor.
    _assert_all_released(ray)
    envs = ray_env.ray_environments([_pendulum] * 2, envs_per_actor=2, num_cpus_per_actor=0.5)
    envs[0].reset()
    os.kill(envs[0].call('pid'), signal.SIGKILL)
    with pytest.raises(ray_env.RayActorDiedError, match='died'):
        envs[0].step(np.zeros(1, np.float32))
    with pytest.raises(ray_env.RayActorDiedError, match='died'):
        envs[1].reset()
    for env in envs:
        env.close()
    _assert_all_released(ray)


@pytest.mark.integration
def test_restart_on_failure_ends_the_episode(ray):
    envs = ray_env.ray_environments(
        [_pendulum] * 2, envs_per_actor=2, num_cpus_per_actor=0.5, restart_on_failure=True)
    batch = batch_env.BatchEnv(envs, blocking=False)
    try:
        batch.reset(seeds=[0, 1])
        last_observ = batch.step(np.zeros((2, 1), np.float32))[0]
        old_pid = envs[0].call('pid')
        os.kill(old_pid, signal.SIGKILL)
        observ, reward, terminated, truncated, infos = batch.step(np.zeros((2, 1), np.float32))
        np.testing.assert_array_equal(observ, last_observ)
        np.testing.assert_array_equal(reward, [0, 0])
        np.testing.assert_array_equal(terminated, [False, False])
        np.testing.assert_array_equal(truncated, [True, True])
        assert all(info.get('env_restarted') for info in infos)
        assert envs[0].call('pid') != old_pid
        batch.reset()
        observ, _, _, truncated, infos = batch.step(np.zeros((2, 1), np.float32))
        assert not truncated.any() and not any(infos)
    finally:
        batch.close()
    _assert_all_released(ray)


@pytest.mark.integration
def test_restart_reports_envs_not_in_the_failed_batch(ray):
    envs = ray_env.ray_environments(
        [_pendulum] * 2, envs_per_actor=2, num_cpus_per_actor=0.5, restart_on_failure=True)
    try:
        for env in envs:
            env.reset(seed=0)
        os.kill(envs[0].call('pid'), signal.SIGKILL)
        # The reset of env 0 is redone in the new actor, which starts a new episode;
        # env 1 learns of the restart on its next step.
        assert envs[0].reset(seed=0)[0].shape == (3,)
        assert envs[0].step(np.zeros(1, np.float32))[4] == {}
        transition = envs[1].step(np.zeros(1, np.float32))
        assert transition[3] and transition[4] == {'env_restarted': True}
        assert envs[1].step(np.zeros(1, np.float32))[4] == {}
    finally:
        for env in envs:
            env.close()
    _assert_all_released(ray)


@pytest.mark.integration
def test_too_few_cpus_times_out_clearly(ray):
    with pytest.raises(TimeoutError, match='num_cpus_per_actor'):
        ray_env.ray_environments(
            [_pendulum] * 3, num_cpus_per_actor=1, startup_timeout=0.5)
    _assert_all_released(ray)


@pytest.mark.parametrize('arguments, message', [
    (dict(constructors=[]), 'at least one'),
    (dict(constructors=[_pendulum], envs_per_actor=0), 'envs_per_actor'),
    (dict(constructors=[_pendulum], num_cpus_per_actor=0), 'num_cpus_per_actor'),
    (dict(constructors=[_pendulum], placement='scatter'), 'placement'),
])
def test_invalid_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        ray_env.ray_environments(**arguments)


def test_missing_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'ray', None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[ray\]'"):
        ray_env.ray_environments([_pendulum])


def test_package_imports_without_ray():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import agents.tools, agents.tools.envs.ray\n")
    subprocess.run([sys.executable, '-c', code], check=True, cwd=testing.REPOSITORY)
