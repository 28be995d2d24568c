"""The Gymnasium adapter (`VectorEnv`) against Gymnasium's SyncVectorEnv, on every backend."""

import functools
import subprocess
import sys

import gymnasium
from gymnasium.vector import AutoresetMode
import numpy as np
import pytest

from agents.tools.envs import testing
from agents.tools.envs import vector_env


@pytest.fixture
def make_vector_env(build_on_backend):
    """Function of the constructors and options that builds a `VectorEnv` on the backend."""
    return functools.partial(build_on_backend, vector_env.VectorEnv)


def run_beside(ours, sync, steps, seed=0):
    """Reset both with the seed, step them with the same actions, check they return the same.

    Returns:
      Numbers of terminations and truncations seen.
    """
    testing.assert_identical(ours.reset(seed=seed), sync.reset(seed=seed))
    sync.action_space.seed(0 if seed is None else seed)
    terminations = truncations = 0
    for step in range(steps):
        actions = sync.action_space.sample()
        expected = sync.step(actions)
        testing.assert_identical(ours.step(actions), expected, f'step {step}')
        terminations += expected[2].sum()
        truncations += expected[3].sum()
    return terminations, truncations


# Every task in the default mode, and CartPole in the other.
@pytest.mark.parametrize('task, mode', [
    *((task, AutoresetMode.NEXT_STEP) for task in testing.SHORT_TASKS),
    ('CartPole-v1', AutoresetMode.SAME_STEP)])
def test_bit_identical_to_sync_vector_env_across_episode_ends(make_vector_env, task, mode):
    env_fns = [testing.SHORT_TASKS[task]] * 3
    ours = make_vector_env(env_fns, autoreset_mode=mode)
    sync = gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=mode)
    assert ours.num_envs == sync.num_envs == 3
    for space in ('single_observation_space', 'single_action_space', 'observation_space',
                  'action_space'):
        assert getattr(ours, space) == getattr(sync, space), space
    assert ours.metadata == sync.metadata
    assert ours.metadata['autoreset_mode'] is mode
    assert ours.render_mode == sync.render_mode is None
    terminations, truncations = run_beside(ours, sync, steps=40)
    assert truncations >= 2 and (terminations >= 1 or task == 'Pendulum-v1')
    # Seed lists, options and partial resets.
    testing.assert_identical(ours.reset(seed=[7, 8, 9]), sync.reset(seed=[7, 8, 9]))
    mask = np.array([True, False, True])
    testing.assert_identical(
        ours.reset(seed=[1, 2, 3], options={'reset_mask': mask}),
        sync.reset(seed=[1, 2, 3], options={'reset_mask': mask}))
    for step in range(12):
        actions = sync.action_space.sample()
        testing.assert_identical(ours.step(actions), sync.step(actions), f'step {step}')
    sync.close()


@pytest.mark.parametrize('task, mode', [
    *((task, AutoresetMode.NEXT_STEP) for task in testing.SHORT_TASKS),
    ('CartPole-v1', AutoresetMode.SAME_STEP)])
def test_on_envpool_bit_identical_to_sync_vector_env_of_its_environments(task, mode):
    pytest.importorskip('envpool', reason="pip install -e '.[envpool]' to test it.")
    env_fns = [functools.partial(testing.seeded, testing.SHORT_TASKS[task], seed)
               for seed in (10, 11, 12)]
    ours = vector_env.VectorEnv(env_fns, backend='envpool', autoreset_mode=mode)
    sync = gymnasium.vector.SyncVectorEnv(
        [functools.partial(testing.OwnPoolEnv, env_fn, index)
         for index, env_fn in enumerate(env_fns)], autoreset_mode=mode)
    try:
        assert ours.observation_space == sync.observation_space
        assert ours.action_space == sync.action_space
        terminations, truncations = run_beside(ours, sync, steps=100, seed=None)
        assert truncations >= 2 and (terminations >= 1 or task == 'Pendulum-v1')
    finally:
        ours.close()
        sync.close()


@pytest.mark.parametrize('mode', list(AutoresetMode))
def test_infos_and_resets_of_environments_ending_at_different_steps(make_vector_env, mode):
    ours = make_vector_env(testing.counting_envs(), autoreset_mode=mode)
    sync = gymnasium.vector.SyncVectorEnv(testing.counting_envs(), autoreset_mode=mode)
    options = {'level': 2}
    testing.assert_identical(ours.reset(options=options), sync.reset(options=options))
    actions = np.array([0, 1, 2])
    for step in range(14):
        expected = sync.step(actions)
        testing.assert_identical(ours.step(actions), expected, f'step {step}')
        ended = expected[2] | expected[3]
        if mode is AutoresetMode.DISABLED and ended.any():
            with pytest.raises(RuntimeError, match='DISABLED, reset them'):
                ours.step(actions)
            testing.assert_identical(
                ours.reset(options={'reset_mask': ended.copy()}),
                sync.reset(options={'reset_mask': ended.copy()}))
    sync.close()


@pytest.mark.parametrize('mode', list(AutoresetMode))
def test_dict_spaces_with_unsorted_keys_as_sync_vector_env(make_vector_env, mode):
    # Observations at resets, steps, final observations and masked resets, and
    # Dict actions, each value under its own key.
    env_fns = [functools.partial(testing.KeyedEnv, length) for length in (2, 3, 4)]
    ours = make_vector_env(env_fns, autoreset_mode=mode)
    sync = gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=mode)
    assert ours.observation_space == sync.observation_space
    assert list(ours.single_observation_space.spaces) == [
        'observation', 'desired_goal', 'achieved_goal']
    testing.assert_identical(ours.reset(seed=3), sync.reset(seed=3))
    sync.action_space.seed(0)
    for step in range(12):
        actions = sync.action_space.sample()
        expected = sync.step(actions)
        testing.assert_identical(ours.step(actions), expected, f'step {step}')
        ended = expected[2] | expected[3]
        if mode is not AutoresetMode.NEXT_STEP and (ended.any() or step % 4 == 0):
            mask = ended | (np.arange(3) == step % 3)
            testing.assert_identical(
                ours.reset(options={'reset_mask': mask.copy()}),
                sync.reset(options={'reset_mask': mask.copy()}), f'reset at step {step}')
    sync.close()


_VARIABLE_SIZE = gymnasium.spaces.Tuple([
    gymnasium.spaces.Text(4),
    gymnasium.spaces.Sequence(gymnasium.spaces.Discrete(3)),
    gymnasium.spaces.Graph(
        gymnasium.spaces.Box(0, 1, (2,), np.float32), gymnasium.spaces.Discrete(3)),
    gymnasium.spaces.OneOf([gymnasium.spaces.Discrete(2), gymnasium.spaces.Text(2)]),
    gymnasium.spaces.Box(0, 1, (2,), np.float32)])


@pytest.mark.parametrize('mode', [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_spaces_without_fixed_shapes_are_batched_as_sync_vector_env_batches_them(
        make_vector_env, backend, mode):
    env_fns = [functools.partial(testing.SampleEnv, _VARIABLE_SIZE, length)
               for length in (2, 3, 4)]
    if backend.name == 'parallel':
        with pytest.raises(TypeError, match='inprocess, process and ray backends take'):
            make_vector_env(env_fns, autoreset_mode=mode)
        return
    ours = make_vector_env(env_fns, autoreset_mode=mode)
    sync = gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=mode)
    assert ours.observation_space == sync.observation_space
    assert ours.action_space == sync.action_space
    run_beside(ours, sync, steps=8, seed=5)
    sync.close()


@pytest.mark.parametrize('observation_mode', [
    'different',
    (gymnasium.spaces.Box(0, np.repeat(np.arange(1, 4), 2).reshape(3, 2).astype(np.float32)),
     gymnasium.spaces.Box(0, 1, (2,), np.float32))])
def test_observation_spaces_that_differ_in_bounds_as_sync_vector_env(
        make_vector_env, observation_mode):
    env_fns = [functools.partial(
        testing.SampleEnv, gymnasium.spaces.Box(0, high, (2,)),
        action_space=gymnasium.spaces.Discrete(2)) for high in (1, 2, 3)]
    ours = make_vector_env(env_fns, observation_mode=observation_mode, autoreset_mode='SameStep')
    sync = gymnasium.vector.SyncVectorEnv(
        env_fns, observation_mode=observation_mode, autoreset_mode='SameStep')
    assert ours.observation_space == sync.observation_space
    assert ours.single_observation_space == sync.single_observation_space
    run_beside(ours, sync, steps=5)
    sync.close()
    with pytest.raises(RuntimeError, match="not equivalent. .*use `observation_mode='different'`"):
        make_vector_env(env_fns)
    different_shapes = [functools.partial(
        testing.SampleEnv, gymnasium.spaces.Box(0, 1, (size,)),
        action_space=gymnasium.spaces.Discrete(2)) for size in (1, 2)]
    with pytest.raises(RuntimeError, match='do not share a common shape and dtype'):
        make_vector_env(different_shapes, observation_mode='different')
    with pytest.raises(ValueError, match='Invalid `observation_mode`'):
        make_vector_env(env_fns, observation_mode='other')


def test_final_observations_are_the_environments_own_objects(make_vector_env):
    # CountingEnv returns Python ints for its Discrete space, where batches
    # hold int64s.
    env_fns = [functools.partial(
        testing.CountingEnv, length, observation_space=gymnasium.spaces.Discrete(9))
        for length in (2, 3)]
    ours = make_vector_env(env_fns, autoreset_mode='SameStep')
    sync = gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode='SameStep')
    testing.assert_identical(ours.reset(), sync.reset())
    for step in range(4):
        expected, result = sync.step(np.array([0, 1])), ours.step(np.array([0, 1]))
        testing.assert_identical(result, expected, f'step {step}')
    sync.close()


def test_infos_are_added_as_gymnasium_adds_them():
    infos = [
        {'int': 1, 'float': 0.5, 'bool': True, 'scalar': np.float32(2.5),
         'array': np.arange(3.0), 'text': 'a', 'nested': {'inner': 4, 'deeper': {'x': 1.5}}},
        {},
        {'float': 1.5, 'final_obs': np.ones(2), 'nested': {'other': np.int64(7)}},
        {'text': 'd', 'final_obs': np.zeros(2), 'array': np.ones(3), 'bool': False}]

    class Reference(gymnasium.vector.VectorEnv):
        num_envs = len(infos)

    class Ours(Reference):
        _add_info = vector_env.VectorEnv._add_info

    expected, actual = {}, {}
    for index, info in enumerate(infos):
        expected = Reference()._add_info(expected, info, index)
        actual = Ours()._add_info(actual, info, index)
    testing.assert_identical(actual, expected)


def test_call_get_attr_and_set_attr(make_vector_env):
    ours = make_vector_env(testing.counting_envs())
    sync = gymnasium.vector.SyncVectorEnv(testing.counting_envs())
    for env in (ours, sync):
        env.reset(seed=0)
        env.step(np.array([1, 1, 1]))
    testing.assert_identical(ours.call('scaled_count', 3), sync.call('scaled_count', 3))
    testing.assert_identical(ours.call('length'), sync.call('length'))
    testing.assert_identical(ours.get_attr('length'), sync.get_attr('length'))
    testing.assert_identical(ours.np_random_seed, sync.np_random_seed)
    for env in (ours, sync):
        env.set_attr('length', [7, 8, 9])
    testing.assert_identical(ours.get_attr('length'), (7, 8, 9))
    for env in (ours, sync):
        env.set_attr('label', 'same')
    testing.assert_identical(ours.get_attr('label'), sync.get_attr('label'))
    with pytest.raises(ValueError, match='Got `2` values for 3 environments'):
        ours.set_attr('length', [1, 2])
    sync.close()


def test_renders_frames_where_the_environments_run(make_vector_env):
    make = functools.partial(gymnasium.make, 'CartPole-v1', render_mode='rgb_array')
    ours = make_vector_env([make] * 2)
    sync = gymnasium.vector.SyncVectorEnv([make] * 2)
    assert ours.render_mode == sync.render_mode == 'rgb_array'
    ours.reset(seed=4)
    sync.reset(seed=4)
    testing.assert_identical(ours.render(), sync.render())
    sync.close()


def test_bad_input_gets_clear_errors(make_vector_env):
    with pytest.raises(ValueError, match="Unknown autoreset_mode 'sometimes'; choose one of"):
        make_vector_env(testing.counting_envs(), autoreset_mode='sometimes')
    ours = make_vector_env(testing.counting_envs())
    ours.reset()
    with pytest.raises(ValueError, match=r'one action per environment \(3\), got a batch of 2'):
        ours.step(np.array([0, 1]))
    with pytest.raises(ValueError, match='length must match num_envs=3'):
        ours.reset(seed=[1, 2])
    with pytest.raises(TypeError, match='got a scalar'):  # As SyncVectorEnv raises.
        ours.step(1)
    with pytest.raises(TypeError, match='must be a numpy array'):
        ours.reset(options={'reset_mask': [True, False, True]})
    with pytest.raises(ValueError, match='at least one True'):
        ours.reset(options={'reset_mask': np.zeros(3, bool)})
    # After an episode end, bad actions are refused before any environment resets.
    for _ in range(3):
        ours.step(np.array([0, 0, 0]))
    resets, counts = ours.get_attr('resets'), ours.get_attr('count')
    with pytest.raises(ValueError, match=r'one action per environment \(3\), got a batch of 4'):
        ours.step(np.zeros(4, np.int64))
    assert ours.get_attr('resets') == resets and ours.get_attr('count') == counts


def test_close_is_idempotent_and_final(make_vector_env):
    ours = make_vector_env(testing.counting_envs())
    ours.reset()
    ours.close()
    ours.close()
    assert ours.closed
    with pytest.raises(RuntimeError, match='closed'):
        ours.step(np.array([0, 0, 0]))


def test_importing_the_face_does_not_import_tensorflow():
    code = (
        'import sys\n'
        'from agents.tools import VectorEnv\n'
        'import agents.tools.envs.vector_env\n'
        'assert "tensorflow" not in sys.modules, "the Gymnasium adapter imported TensorFlow"\n'
        'assert "stable_baselines3" not in sys.modules, "the Gymnasium adapter imported SB3"\n')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=testing.REPOSITORY)
