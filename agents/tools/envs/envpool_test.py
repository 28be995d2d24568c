"""Tests of the envpool backend against Gymnasium's tasks (see also contract_test.py)."""

import functools
import sys

import gymnasium as gym
import numpy as np
import pytest

from agents.tools import wrappers
from agents.tools.envs import testing

envpool = pytest.importorskip('envpool', reason="pip install -e '.[envpool]' to test it.")

from agents.tools.envs import envpool as envpool_backend  # noqa: E402  After the skip.


def _set_acrobot(env, observ):
    angles = np.arctan2(observ[[1, 3]], observ[[0, 2]])
    env.unwrapped.state = np.concatenate([angles, observ[4:]])


def _set_pendulum(env, observ):
    env.unwrapped.state = np.array([np.arctan2(observ[1], observ[0]), observ[2]])


def _set_classic_state(env, observ):
    env.unwrapped.state = np.array(observ, np.float64)


def _set_positions_and_velocities(env, observ):
    """MuJoCo tasks observing qpos (but its first entries) and qvel, nothing else.

    Walker2d-v5 clips the velocities it observes to [-10, 10]; where they are
    clipped, Gymnasium's copy keeps its own.
    """
    data = env.unwrapped.data
    positions = observ[:len(observ) - len(data.qvel)]
    qpos = data.qpos.copy()
    qpos[len(qpos) - len(positions):] = positions
    velocities = observ[len(positions):]
    qvel = np.where(np.abs(velocities) < 10, velocities, data.qvel)
    env.unwrapped.set_state(qpos, qvel)


def _set_reacher(env, observ):
    data = env.unwrapped.data
    qpos, qvel = data.qpos.copy(), data.qvel.copy()
    # The angle that the cosine and sine show nearest the copy's own: the
    # elbow's soft limit lets it pass pi, where arctan2 would wrap around.
    turn = np.arctan2(observ[2:4], observ[0:2]) - qpos[:2]
    qpos[:2] += (turn + np.pi) % (2 * np.pi) - np.pi
    qpos[2:4] = observ[4:6]
    qvel[:2] = observ[6:8]
    env.unwrapped.set_state(qpos, qvel)


def _set_pusher(env, observ):
    unwrapped = env.unwrapped
    qpos, qvel = unwrapped.data.qpos.copy(), unwrapped.data.qvel.copy()
    qpos[:7], qvel[:7] = observ[:7], observ[7:14]
    # The object and the goal slide along joints 7 to 10, each along one axis.
    shift = np.concatenate([
        observ[17:20] - unwrapped.get_body_com('object'),
        observ[20:23] - unwrapped.get_body_com('goal')])
    axes = unwrapped.model.jnt_axis[7:11]
    qpos[7:9] += axes[:2] @ shift[:3]
    qpos[9:11] += axes[2:] @ shift[3:]
    unwrapped.set_state(qpos, qvel)


# Tasks whose observations show their state: before each step, Gymnasium's
# copy is put into the state of envpool's observation; what they do not show
# (the torso's x, the object's velocity) the copy keeps, as the dynamics and
# rewards do not depend on it or it evolves alike in both.
_STATE_FROM_OBSERVATION = {
    'Pendulum-v1': _set_pendulum,
    'CartPole-v1': _set_classic_state,
    'Acrobot-v1': _set_acrobot,
    'MountainCar-v0': _set_classic_state,
    'MountainCarContinuous-v0': _set_classic_state,
    'HalfCheetah-v5': _set_positions_and_velocities,
    'Hopper-v5': _set_positions_and_velocities,
    'Walker2d-v5': _set_positions_and_velocities,
    'Swimmer-v5': _set_positions_and_velocities,
    'InvertedPendulum-v5': _set_positions_and_velocities,
    'Reacher-v5': _set_reacher,
    'Pusher-v5': _set_pusher,
}
# MuJoCo tasks that observe more than their state (inertias, contact forces):
# both start without reset noise and step on alike. Their contacts amplify the
# rounding differences of envpool's MuJoCo build over tens of steps (about
# 1e-7 after one step, 1e-3 after ten in Ant-v5), so the first steps are
# compared: positions and velocities closely, contact forces, which MuJoCo's
# solver finds to about 1e-3 in HumanoidStandup-v5, loosely.
_NOISELESS_START = ['Ant-v5', 'Humanoid-v5', 'HumanoidStandup-v5', 'InvertedDoublePendulum-v5']


def _actions(space, count, steps, seed=0):
    space.seed(seed)
    return np.stack([np.stack([space.sample() for _ in range(count)]) for _ in range(steps)])


def _assert_same_transitions(batch, references, steps, set_state=None, tolerance=1e-5,
                             loose_from=None):
    """Step the batch and Gymnasium's environments alike; compare until an episode ends.

    Args:
      batch: The envpool batch, reset.
      references: Gymnasium's environments, one per environment of the batch, reset.
      steps: Steps to compare at most.
      set_state: Function putting a Gymnasium environment into the state an
        observation of envpool shows, called before each step; or None.
      tolerance: Relative and absolute tolerance of observations and rewards.
      loose_from: Index of the first observation entry compared only to 1e-2, or None.
    """
    observ, _ = batch.reset()
    for actions in _actions(batch.action_space, len(references), steps):
        if set_state:
            for env, state in zip(references, observ):
                set_state(env, state)
        observ, reward, terminated, truncated, _ = batch.step(actions)
        for index, (env, action) in enumerate(zip(references, actions)):
            expected = env.step(action)
            np.testing.assert_allclose(
                observ[index][:loose_from], expected[0][:loose_from], tolerance, tolerance)
            np.testing.assert_allclose(observ[index], expected[0], 1e-2, 1e-2)
            assert reward[index] == pytest.approx(expected[1], tolerance, tolerance)
            assert (terminated[index], truncated[index]) == expected[2:4]
        if np.any(terminated | truncated):
            return


@pytest.mark.parametrize('task', list(_STATE_FROM_OBSERVATION))
def test_same_transitions_as_gymnasium_from_the_same_states(task):
    batch = envpool_backend.EnvpoolBatchEnv(
        [functools.partial(testing.seeded, functools.partial(gym.make, task), seed)
         for seed in (1, 2)])
    references = [gym.make(task) for _ in range(2)]
    try:
        assert batch.observation_space == references[0].observation_space
        assert batch.action_space == references[0].action_space
        for env in references:
            env.reset()
        _assert_same_transitions(batch, references, 40, _STATE_FROM_OBSERVATION[task])
    finally:
        batch.close()


def test_pendulum_turns_by_its_velocity_before_clipping_it():
    # Gymnasium's Pendulum-v1 clips the new velocity to 8 and then turns by it;
    # envpool's turns by the velocity before clipping, so the two differ in
    # the angle (by up to about 0.05 rad) on the steps where the velocity is clipped.
    batch = envpool_backend.EnvpoolBatchEnv([functools.partial(gym.make, 'Pendulum-v1')])
    reference = gym.make('Pendulum-v1')
    reference.reset()
    try:
        (observ,), _ = batch.reset()
        clipped = 0
        for _ in range(150):
            # Torque along the velocity spins the pendulum up to the limit.
            action = np.float32([2.0 if observ[2] >= 0 else -2.0])
            _set_pendulum(reference, observ)
            angle, velocity = reference.unwrapped.state
            expected = reference.step(action)[0]
            (observ,), _, _, _, _ = batch.step(action[None])
            if abs(expected[2]) < 8:
                np.testing.assert_allclose(observ, expected, 1e-5, 1e-5)
                continue
            clipped += 1
            unclipped = velocity + (15 * np.sin(angle) + 3 * action[0]) * 0.05
            turned = angle + unclipped * 0.05
            np.testing.assert_allclose(
                observ, [np.cos(turned), np.sin(turned), expected[2]], 1e-5, 1e-5)
        assert clipped
    finally:
        batch.close()


@pytest.mark.parametrize('task', _NOISELESS_START)
def test_same_first_transitions_as_gymnasium_from_noiseless_starts(task):
    # The task's argument reaches envpool's task as well.
    constructor = functools.partial(gym.make, task, reset_noise_scale=0.0)
    batch = envpool_backend.EnvpoolBatchEnv([constructor] * 2)
    references = [constructor() for _ in range(2)]
    try:
        first, _ = batch.reset()
        for env, observ in zip(references, first):
            np.testing.assert_allclose(env.reset()[0], observ, atol=1e-12)
        model = references[0].unwrapped.model
        _assert_same_transitions(
            batch, references, 3, tolerance=1e-4, loose_from=model.nq - 2 + model.nv)
    finally:
        batch.close()


def test_every_mujoco_v5_task_envpool_ships_is_compared_with_gymnasium():
    tasks = {
        task for task in envpool.list_all_envs()
        if task in gym.registry and task.endswith('-v5') and
        'mujoco' in str(gym.spec(task).entry_point)}
    assert tasks == {task for task in _STATE_FROM_OBSERVATION if task.endswith('-v5')} | set(
        _NOISELESS_START)


@pytest.mark.parametrize('task', ['Pendulum-v1', 'HalfCheetah-v5'])
def test_standard_wrappers_act_on_the_batches_as_on_single_environments(task):
    def wrapped():
        env = wrappers.LimitDuration(gym.make(task), 7)
        return wrappers.ConvertTo32Bit(wrappers.ClipAction(wrappers.RangeNormalize(env)))

    single = wrapped()
    raw = envpool_backend.EnvpoolBatchEnv(
        [functools.partial(testing.seeded, functools.partial(gym.make, task), 3)] * 2)
    batch = envpool_backend.EnvpoolBatchEnv([functools.partial(testing.seeded, wrapped, 3)] * 2)
    try:
        assert batch.observation_space == single.observation_space
        assert batch.action_space == single.action_space
        space = gym.make(task)
        low, high = space.action_space.low, space.action_space.high
        observ_low, observ_high = space.observation_space.low, space.observation_space.high
        finite = np.all(np.isfinite(observ_low))
        # Both pools start with the same seeds, so in the same states.
        raw_observ, _ = raw.reset()
        observ, _ = batch.reset()
        for step, actions in enumerate(_actions(gym.spaces.Box(-2, 2, low.shape), 2, 7), 1):
            unit = np.clip(actions, -1, 1)
            raw_result = raw.step((low + (unit + 1) / 2 * (high - low)).astype(np.float32))
            observ, reward, _, truncated, _ = batch.step(actions)
            expected = raw_result[0]
            if finite:
                expected = 2 * (expected - observ_low) / (observ_high - observ_low) - 1
            np.testing.assert_allclose(observ, expected, rtol=1e-5, atol=1e-5)
            assert observ.dtype == reward.dtype == np.float32
            np.testing.assert_allclose(reward, raw_result[1], rtol=1e-5)
            assert truncated.all() == (step == 7)
    finally:
        raw.close()
        batch.close()


def test_step_of_some_environments_steps_only_those_in_the_order_given():
    constructors = [
        functools.partial(testing.seeded, functools.partial(gym.make, 'Pendulum-v1'), seed)
        for seed in (1, 2, 3)]
    some = envpool_backend.EnvpoolBatchEnv(constructors)
    every = envpool_backend.EnvpoolBatchEnv(constructors)
    try:
        some.reset()
        every.reset()
        actions = np.float32([[0.5], [-1.0], [1.5]])
        expected = every.step(actions)
        result = some.step(actions[[2, 0]], indices=[2, 0])
        for part, expected_part in zip(result[:4], expected[:4]):
            np.testing.assert_array_equal(part, expected_part[[2, 0]])
        assert [info['env_id'] for info in result[4]] == [2, 0]
        # Environment 1 was not stepped: its first step is the one `every` took.
        np.testing.assert_array_equal(some.step(actions[[1]], indices=[1])[0], expected[0][[1]])
        assert some.step(np.zeros((0, 1), np.float32), indices=[])[0].shape == (0, 3)
    finally:
        some.close()
        every.close()


def test_rewards_are_envpools_float32_and_single_environments_are_out_of_reach():
    batch = envpool_backend.EnvpoolBatchEnv([functools.partial(gym.make, 'Pendulum-v1')] * 2)
    try:
        batch.reset()
        assert batch.step(np.zeros((2, 1), np.float32))[1].dtype == np.float32
        batch.reward_dtype = np.float64
        reward = batch.step(np.zeros((2, 1), np.float32))[1]
        assert reward.dtype == np.float64
        np.testing.assert_array_equal(reward, np.float32(reward))  # Widened float32 values.
        assert not batch.reaches_environments and batch.render_mode is None
        with pytest.raises(TypeError, match='no access to single environments'):
            batch.call('state')
    finally:
        batch.close()


def test_seeds_of_the_constructors_seed_the_pool():
    def pendulum(seed):
        return functools.partial(testing.seeded, functools.partial(gym.make, 'Pendulum-v1'), seed)

    first = envpool_backend.EnvpoolBatchEnv([pendulum(5)] * 2)
    second = envpool_backend.EnvpoolBatchEnv([pendulum(5)] * 2)
    other = envpool_backend.EnvpoolBatchEnv([pendulum(6)] * 2)
    try:
        observ = first.reset()[0]
        np.testing.assert_array_equal(observ, second.reset()[0])
        assert not np.allclose(observ, other.reset()[0])
        with pytest.raises(ValueError, match='cannot reseed'):
            first.reset(seeds=[1, 2])
    finally:
        for batch in (first, second, other):
            batch.close()


@pytest.mark.parametrize('constructor, message', [
    (functools.partial(gym.make, 'Taxi-v4'), "envpool has no task 'Taxi-v4'"),
    (lambda: wrappers.FrameDelta(gym.make('Pendulum-v1')), 'cannot reproduce the wrapper'),
    (functools.partial(gym.make, 'Pendulum-v1', g=5.0), 'without the arguments g=5.0'),
    (functools.partial(gym.make, 'Pendulum-v1', render_mode='rgb_array'),
     "without the arguments render_mode='rgb_array'"),
    (functools.partial(gym.make, 'Blackjack-v1'), 'observation space Box'),
])
def test_tasks_envpool_cannot_host_name_the_backends_that_can(constructor, message):
    with pytest.raises((ValueError, TypeError), match=message) as caught:
        envpool_backend.EnvpoolBatchEnv([constructor])
    assert 'parallel' in str(caught.value)


def test_unseeded_environments_start_apart_and_without_envpool_time_limit():
    def unlimited():
        return gym.make('Pendulum-v1').unwrapped

    constructors = [functools.partial(testing.seeded, unlimited, 5), unlimited]
    first = envpool_backend.EnvpoolBatchEnv(constructors)
    second = envpool_backend.EnvpoolBatchEnv(constructors)
    try:
        observ = first.reset()[0]
        other = second.reset()[0]
        np.testing.assert_array_equal(observ[0], other[0])
        assert not np.allclose(observ[1], other[1])
        # envpool would cut Pendulum's episodes off after 200 steps.
        for _ in range(250):
            assert not first.step(np.zeros((2, 1), np.float32))[3].any()
    finally:
        first.close()
        second.close()


def test_missing_envpool_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'envpool', None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[envpool\]'"):
        envpool_backend.EnvpoolBatchEnv([functools.partial(gym.make, 'Pendulum-v1')])
