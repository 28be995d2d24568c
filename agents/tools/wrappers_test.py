"""Tests for ExternalProcess and the environment wrappers."""

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

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _CountingEnv(gymnasium.Env):
    """Deterministic environment whose observation is the number of steps taken.

    The reward of the n-th step is n; the episode terminates after `length`
    steps. Environments used in workers live at module level, so the worker can
    import them by reference.
    """

    def __init__(self, length=10, observation_space=None, action_space=None,
                 step_delay=0.0, close_delay=0.0):
        self.observation_space = observation_space or gymnasium.spaces.Box(
            -np.inf, np.inf, (2,), np.float64)
        self.action_space = action_space or gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.length = length
        self.step_delay = step_delay
        self.close_delay = close_delay
        self.count = 0
        self.resets = 0
        self.actions = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = 0
        self.resets += 1
        return self._observ(), {'reset': True}

    def step(self, action):
        time.sleep(self.step_delay)
        self.actions.append(np.asarray(action))
        self.count += 1
        terminated = self.count >= self.length
        return self._observ(), float(self.count), terminated, False, {'count': self.count}

    def scaled_count(self, factor):
        return factor * self.count

    def close(self):
        time.sleep(self.close_delay)

    def _observ(self):
        space = self.observation_space
        return np.full(space.shape, self.count, space.dtype)


class _RaisingEnv(_CountingEnv):
    """Raises in `step`, to test error reporting from workers."""

    def step(self, action):
        raise ValueError('boom')


class _ExitingEnv(_CountingEnv):
    """Ends its process in `step`, as a crashing native library would."""

    def step(self, action):
        os._exit(3)


class _OldGymSpaces:
    """Stand-ins for spaces of the old Gym package, which GymToGymnasium converts."""

    class Box:

        def __init__(self, low, high, shape):
            self.low = np.full(shape, low, np.float32)
            self.high = np.full(shape, high, np.float32)
            self.shape = shape
            self.dtype = np.dtype(np.float32)


class _OldApiEnv:
    """Environment with the old Gym API: bare reset and a 4-tuple step."""

    def __init__(self, length, time_limit):
        self.observation_space = _OldGymSpaces.Box(-1.0, 1.0, (3,))
        self.action_space = _OldGymSpaces.Box(-2.0, 2.0, (1,))
        self.length = length
        self.time_limit = time_limit
        self.seeds = []
        self.count = 0

    def seed(self, seed):
        self.seeds.append(seed)

    def reset(self):
        self.count = 0
        return np.zeros(3, np.float32)

    def step(self, action):
        self.count += 1
        done = self.count >= self.length
        info = {'TimeLimit.truncated': True} if done and self.time_limit else {}
        return np.full(3, self.count, np.float32), 1.0, done, info


def _is_running(pid):
    """Whether a process exists and is not a zombie."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            state = stat.read().rsplit(')', 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != 'Z'


def _wait_until_gone(pid, timeout):
    deadline = time.monotonic() + timeout
    while _is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _is_running(pid)


def test_external_process_matches_local_env_after_tensorflow_import():
    import tensorflow  # noqa: F401  The start method must be safe after this import.
    external = wrappers.ExternalProcess(lambda: gymnasium.make('Pendulum-v1'))
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
        wrappers.ExternalProcess(functools.partial(_CountingEnv, length=index + 1,
                                                   step_delay=0.4))
        for index in range(3)]
    try:
        for promise in [env.reset(blocking=False) for env in envs]:
            assert promise()[1] == {'reset': True}
        start = time.monotonic()
        promises = [env.step([0.0], blocking=False) for env in envs]
        results = [promise() for promise in reversed(promises)][::-1]
        assert time.monotonic() - start < 1.0  # Serial stepping would take 1.2 s.
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
        env = _CountingEnv(length=100, action_space=gymnasium.spaces.Box(0.0, 4.0, (1,)))
        return wrappers.ConvertTo32Bit(wrappers.RangeNormalize(wrappers.LimitDuration(env, 2)))

    with wrappers.ExternalProcess(constructor) as env:
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
    with wrappers.ExternalProcess(_RaisingEnv) as env:
        env.reset()
        with pytest.raises(wrappers.WorkerError) as raised:
            env.step([0.0])
        message = str(raised.value)
        assert 'ValueError: boom' in message
        assert 'Traceback (most recent call last)' in message
        assert "raise ValueError('boom')" in message and 'wrappers_test.py' in message
        assert raised.value.exception_type == 'ValueError'
        # The worker keeps serving requests after an exception.
        assert env.count == 0
        assert env.reset()[1] == {'reset': True}


def test_failing_constructor_is_reported_by_every_request():
    with wrappers.ExternalProcess(lambda: gymnasium.make('NoSuchEnvironment-v0')) as env:
        for _ in range(2):
            with pytest.raises(wrappers.WorkerError, match='NoSuchEnvironment'):
                env.reset()


def test_killed_worker_raises_clear_error_quickly():
    env = wrappers.ExternalProcess(_CountingEnv)
    env.reset()
    os.kill(env.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(wrappers.WorkerDiedError, match='killed by signal SIGKILL'):
        env.step([0.0])
    with pytest.raises(wrappers.WorkerDiedError):
        env.reset()
    assert time.monotonic() - start < 10
    env.close()


def test_worker_exiting_during_step_raises_clear_error():
    env = wrappers.ExternalProcess(_ExitingEnv)
    try:
        with pytest.raises(wrappers.WorkerDiedError, match='exited with code 3 while calling'):
            env.step([0.0])
    finally:
        env.close()


def test_close_ends_worker_and_is_idempotent():
    env = wrappers.ExternalProcess(_CountingEnv)
    pid = env.pid
    env.reset()
    env.close()
    env.close()
    assert not _is_running(pid)
    with pytest.raises(RuntimeError, match='closed'):
        env.reset()


def test_close_terminates_worker_that_does_not_exit_in_time():
    env = wrappers.ExternalProcess(functools.partial(_CountingEnv, close_delay=60))
    pid = env.pid
    env.reset()
    start = time.monotonic()
    env.close(timeout=0.5)
    assert time.monotonic() - start < 5
    assert not _is_running(pid)


@pytest.mark.parametrize('exit_statement', ['pass', 'os._exit(0)'])
def test_worker_ends_when_parent_exits_without_closing(exit_statement):
    # os._exit skips the atexit hook, so the worker must notice EOF on its pipe.
    script = (
        'import os, gymnasium\n'
        'from agents.tools import wrappers\n'
        "env = wrappers.ExternalProcess(lambda: gymnasium.make('Pendulum-v1'))\n"
        'env.reset()\n'
        'print(env.pid, flush=True)\n'
        f'{exit_statement}\n')
    result = subprocess.run(
        [sys.executable, '-c', script], cwd=_ROOT, capture_output=True, text=True,
        timeout=60, env=dict(os.environ, PYTHONPATH=_ROOT))
    assert result.returncode == 0, result.stderr
    assert _wait_until_gone(int(result.stdout), timeout=5)


def test_external_process_rejects_bad_constructors():
    with pytest.raises(TypeError, match='callable'):
        wrappers.ExternalProcess(_CountingEnv())
    lock = threading.Lock()
    with pytest.raises(TypeError, match='cloudpickle'):
        wrappers.ExternalProcess(lambda: lock)


def test_limit_duration_truncates_and_requires_reset():
    env = wrappers.LimitDuration(_CountingEnv(length=10), duration=3)
    with pytest.raises(RuntimeError, match='reset'):
        env.step([0.0])
    env.reset()
    flags = [env.step([0.0])[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    with pytest.raises(RuntimeError, match='reset'):
        env.step([0.0])
    env.reset()
    assert env.step([0.0])[0][0] == 1
    short = wrappers.LimitDuration(_CountingEnv(length=1), duration=3)
    short.reset()
    assert short.step([0.0])[2:4] == (True, False)
    with pytest.raises(ValueError, match='duration'):
        wrappers.LimitDuration(_CountingEnv(), duration=0)


def test_range_normalize_maps_finite_ranges_to_unit_interval():
    observation_space = gymnasium.spaces.Box(0.0, 10.0, (2,), np.float64)
    action_space = gymnasium.spaces.Box(0.0, 4.0, (1,), np.float32)
    inner = _CountingEnv(observation_space=observation_space, action_space=action_space)
    env = wrappers.RangeNormalize(inner)
    assert env.observation_space == gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    observ, _ = env.reset()
    np.testing.assert_allclose(observ, [-1, -1])
    for action in ([-1.0], [0.0], [1.0], [0.0], [0.0]):
        observ = env.step(np.array(action, np.float32))[0]
    np.testing.assert_allclose(observ, [0, 0])
    assert observ.dtype == np.float32
    np.testing.assert_allclose(inner.actions[:3], [[0.0], [2.0], [4.0]])
    assert inner.actions[0].dtype == np.float32


def test_range_normalize_leaves_or_rejects_infinite_ranges():
    inner = _CountingEnv()
    env = wrappers.RangeNormalize(inner)
    assert env.observation_space == inner.observation_space
    env.reset()
    np.testing.assert_array_equal(env.step([0.5])[0], [1, 1])
    np.testing.assert_allclose(inner.actions[0], [0.5])
    unchanged = wrappers.RangeNormalize(inner, action=False)
    assert unchanged.action_space == inner.action_space
    with pytest.raises(ValueError, match='finite'):
        wrappers.RangeNormalize(inner, observ=True)


def test_clip_action_clips_to_bounds_and_exposes_unbounded_space():
    inner = _CountingEnv()
    env = wrappers.ClipAction(inner)
    assert np.all(np.isinf(env.action_space.low)) and np.all(np.isinf(env.action_space.high))
    env.reset()
    env.step(np.array([5.0]))
    env.step(np.array([-0.5]))
    np.testing.assert_allclose(inner.actions, [[1.0], [-0.5]])
    assert inner.actions[0].dtype == np.float32
    with pytest.raises(TypeError, match='Box'):
        wrappers.ClipAction(_CountingEnv(action_space=gymnasium.spaces.Discrete(3)))


def test_convert_to_32_bit_converts_observations_spaces_and_rewards():
    env = wrappers.ConvertTo32Bit(_CountingEnv())
    assert env.observation_space.dtype == np.float32
    observ, _ = env.reset()
    assert observ.dtype == np.float32
    observ, reward, _, _, _ = env.step([0.0])
    assert observ.dtype == np.float32 and env.observation_space.contains(observ)
    assert isinstance(reward, np.float32) and reward == 1
    integers = wrappers.ConvertTo32Bit(_CountingEnv(
        observation_space=gymnasium.spaces.Box(0, 100, (2,), np.int64)))
    assert integers.observation_space.dtype == np.int32
    assert integers.reset()[0].dtype == np.int32
    discrete = wrappers.ConvertTo32Bit(_CountingEnv(
        observation_space=gymnasium.spaces.Discrete(20)))
    assert discrete.observation_space.dtype == np.int32
    observ = discrete.reset()[0]
    assert observ.dtype == np.int32 and discrete.observation_space.contains(observ)


def test_convert_to_32_bit_rejects_non_finite_observations():
    inner = _CountingEnv()
    env = wrappers.ConvertTo32Bit(inner)
    env.reset()
    inner.count = np.nan
    with pytest.raises(ValueError, match='non-finite'):
        env.step([0.0])


def test_cache_spaces_reads_spaces_once():
    class CountingSpaceEnv(_CountingEnv):
        reads = 0

        @property
        def observation_space(self):
            CountingSpaceEnv.reads += 1
            return gymnasium.spaces.Box(-1.0, 1.0, (2,))

        @observation_space.setter
        def observation_space(self, value):
            pass

    env = wrappers.CacheSpaces(CountingSpaceEnv())
    reads = CountingSpaceEnv.reads
    for _ in range(3):
        assert env.observation_space == gymnasium.spaces.Box(-1.0, 1.0, (2,))
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    assert CountingSpaceEnv.reads == reads


def test_auto_reset_resets_on_step_after_episode_end():
    inner = _CountingEnv(length=2)
    env = wrappers.AutoReset(inner)
    observ, reward, terminated, truncated, info = env.step([0.0])
    assert (observ[0], reward, terminated, truncated, info) == (0, 0.0, False, False,
                                                                {'reset': True})
    assert env.step([0.0])[2] is False
    assert env.step([0.0])[2] is True
    observ, reward, terminated, _, info = env.step([0.0])
    assert (observ[0], reward, terminated, info) == (0, 0.0, False, {'reset': True})
    assert inner.resets == 2 and len(inner.actions) == 2


def test_action_repeat_sums_rewards_and_stops_at_episode_end():
    inner = _CountingEnv(length=4)
    env = wrappers.ActionRepeat(inner, 3)
    env.reset()
    observ, reward, terminated, _, _ = env.step([0.0])
    assert (observ[0], reward, terminated) == (3, 1 + 2 + 3, False)
    observ, reward, terminated, _, _ = env.step([0.0])
    assert (observ[0], reward, terminated) == (4, 4, True)
    with pytest.raises(ValueError, match='amount'):
        wrappers.ActionRepeat(inner, 0)


def test_random_start_takes_seeded_random_steps_without_ending_episode():
    env = wrappers.RandomStart(_CountingEnv(length=100), max_steps=20)
    starts = [env.reset(seed=seed)[0][0] for seed in range(10)]
    assert all(0 <= start <= 20 for start in starts) and len(set(starts)) > 1
    assert [env.reset(seed=seed)[0][0] for seed in range(10)] == starts
    short = wrappers.RandomStart(_CountingEnv(length=2), max_steps=20)
    assert all(short.reset()[0][0] < 2 for _ in range(10))
    none = wrappers.RandomStart(_CountingEnv(), max_steps=0)
    assert none.reset()[0][0] == 0


def test_frame_history_stacks_past_observations():
    env = wrappers.FrameHistory(_CountingEnv(), past_indices=[0, 2], flatten=False)
    assert env.observation_space.shape == (2, 2)
    observ, _ = env.reset()
    np.testing.assert_array_equal(observ, [[0, 0], [0, 0]])
    np.testing.assert_array_equal(env.step([0.0])[0], [[1, 1], [0, 0]])
    env.step([0.0])
    observ = env.step([0.0])[0]
    np.testing.assert_array_equal(observ, [[3, 3], [1, 1]])
    assert env.observation_space.contains(observ)
    flat = wrappers.FrameHistory(_CountingEnv(), past_indices=[0, 1], flatten=True)
    assert flat.observation_space.shape == (4,)
    flat.reset()
    np.testing.assert_array_equal(flat.step([0.0])[0], [1, 1, 0, 0])
    with pytest.raises(ValueError, match='past_indices'):
        wrappers.FrameHistory(_CountingEnv(), past_indices=[-1], flatten=False)


def test_frame_delta_returns_differences_of_observations():
    space = gymnasium.spaces.Box(0, 255, (2,), np.uint8)
    env = wrappers.FrameDelta(_CountingEnv(observation_space=space))
    assert env.observation_space == gymnasium.spaces.Box(-255, 255, (2,), np.float32)
    observ, _ = env.reset()
    np.testing.assert_array_equal(observ, [0, 0])
    observ = env.step([0.0])[0]
    np.testing.assert_array_equal(observ, [1, 1])
    assert observ.dtype == np.float32 and env.observation_space.contains(observ)


def test_gym_to_gymnasium_adapts_old_api():
    inner = _OldApiEnv(length=2, time_limit=True)
    env = wrappers.GymToGymnasium(inner)
    assert env.observation_space == gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)
    assert env.action_space == gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)
    observ, info = env.reset(seed=7)
    assert inner.seeds == [7] and info == {}
    np.testing.assert_array_equal(observ, [0, 0, 0])
    assert env.step([0.0])[2:4] == (False, False)
    observ, reward, terminated, truncated, _ = env.step([0.0])
    assert (observ[0], reward, terminated, truncated) == (2, 1.0, False, True)
    assert env.length == 2
    terminal = wrappers.GymToGymnasium(_OldApiEnv(length=1, time_limit=False))
    terminal.reset()
    assert terminal.step([0.0])[2:4] == (True, False)
    # Adapted environments work with the other wrappers.
    normalized = wrappers.RangeNormalize(wrappers.GymToGymnasium(_OldApiEnv(5, False)))
    np.testing.assert_allclose(normalized.reset()[0], [0, 0, 0])


def test_gym_to_gymnasium_rejects_new_api_env():
    env = wrappers.GymToGymnasium(_CountingEnv())
    env.reset()
    with pytest.raises(ValueError, match='old Gym API'):
        env.step([0.0])
