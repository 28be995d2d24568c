"""The SB3 adapter (`SB3VecEnv`) against Stable-Baselines3's DummyVecEnv, on every backend."""

import functools
import subprocess
import sys

import gymnasium
import numpy as np
import pytest

from agents.tools.envs import testing

stable_baselines3 = pytest.importorskip(
    'stable_baselines3', reason="pip install -e '.[sb3]' to test the SB3 adapter.")
# pylint: disable=wrong-import-position
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from agents.tools.envs import sb3_vec_env  # noqa: E402


@pytest.fixture
def make_sb3_vec_env(build_on_backend):
    """Function of the constructors and options that builds an `SB3VecEnv` on the backend."""
    return functools.partial(build_on_backend, sb3_vec_env.SB3VecEnv)


def run_beside(ours, dummy, steps, task):
    """Reset both, step them with the same actions and check that they return the same."""
    assert ours.num_envs == dummy.num_envs == 3
    assert ours.observation_space == dummy.observation_space
    assert ours.action_space == dummy.action_space
    testing.assert_identical(ours.reset(), dummy.reset())
    testing.assert_identical(ours.reset_infos, dummy.reset_infos)
    dummy.action_space.seed(0)
    dones = truncations = 0
    for step in range(steps):
        actions = np.stack([dummy.action_space.sample() for _ in range(3)])
        expected = dummy.step(actions)
        testing.assert_identical(ours.step(actions), expected, f'step {step}')
        testing.assert_identical(ours.reset_infos, dummy.reset_infos, f'step {step}')
        dones += expected[2].sum()
        truncations += sum(info['TimeLimit.truncated'] for info in expected[3])
    assert truncations >= 2 and (dones > truncations or task == 'Pendulum-v1')


@pytest.mark.parametrize('task', list(testing.SHORT_TASKS))
def test_bit_identical_to_dummy_vec_env_across_episode_ends(make_sb3_vec_env, task):
    env_fns = [testing.SHORT_TASKS[task]] * 3
    ours, dummy = make_sb3_vec_env(env_fns), DummyVecEnv(env_fns)
    assert ours.render_mode == dummy.render_mode and ours.metadata == dummy.metadata
    assert ours.seed(5) == dummy.seed(5)
    run_beside(ours, dummy, 40, task)
    dummy.close()


@pytest.mark.parametrize('task', list(testing.SHORT_TASKS))
def test_on_envpool_bit_identical_to_dummy_vec_env_of_its_environments(task):
    pytest.importorskip('envpool', reason="pip install -e '.[envpool]' to test it.")
    env_fns = [functools.partial(testing.seeded, testing.SHORT_TASKS[task], seed)
               for seed in (10, 11, 12)]
    ours = sb3_vec_env.SB3VecEnv(env_fns, backend='envpool')
    dummy = DummyVecEnv([functools.partial(testing.OwnPoolEnv, env_fn, index)
                         for index, env_fn in enumerate(env_fns)])
    try:
        run_beside(ours, dummy, 40, task)
    finally:
        ours.close()
        dummy.close()


def test_dict_spaces_with_unsorted_keys_as_dummy_vec_env(make_sb3_vec_env):
    # Observations at resets and steps and terminal observations, and Dict
    # actions, each value under its own key.
    env_fns = [functools.partial(testing.KeyedEnv, length) for length in (2, 3, 4)]
    ours, dummy = make_sb3_vec_env(env_fns), DummyVecEnv(env_fns)
    for env in (ours, dummy):
        env.seed(3)
    testing.assert_identical(ours.reset(), dummy.reset())
    dummy.action_space.seed(0)
    terminals = 0
    for step in range(12):
        actions = [dummy.action_space.sample() for _ in range(3)]
        expected = dummy.step(actions)
        batched = {key: np.stack([action[key] for action in actions])
                   for key in dummy.action_space.spaces}
        testing.assert_identical(ours.step(batched), expected, f'step {step}')
        terminals += sum('terminal_observation' in info for info in expected[3])
        actions = [dummy.action_space.sample() for _ in range(3)]
        # A list of one action per environment, as DummyVecEnv takes them.
        testing.assert_identical(ours.step(actions), dummy.step(actions), f'list {step}')
    assert terminals >= 4
    dummy.close()


def test_terminal_observations_are_the_environments_own_objects(make_sb3_vec_env):
    # CountingEnv returns Python ints for its Discrete space, where batches
    # hold int64s.
    env_fns = [functools.partial(
        testing.CountingEnv, length, observation_space=gymnasium.spaces.Discrete(9))
        for length in (2, 3, 4)]
    ours, dummy = make_sb3_vec_env(env_fns), DummyVecEnv(env_fns)
    testing.assert_identical(ours.reset(), dummy.reset())
    for step in range(5):
        expected = dummy.step(np.array([0, 1, 2]))
        result = ours.step(np.array([0, 1, 2]))
        testing.assert_identical(result, expected, f'step {step}')
    dummy.close()


def test_indices_count_from_the_end_when_negative(make_sb3_vec_env):
    env_fns = [functools.partial(testing.counting_in_time_limit, length) for length in (3, 4, 5)]
    ours, dummy = make_sb3_vec_env(env_fns), DummyVecEnv(env_fns)
    for env in (ours, dummy):
        env.set_attr('marker', 'last', indices=[-1])
        env.set_attr('marker', 'first', indices=-3)
    assert ours.get_attr('length', indices=[0, -1]) == dummy.get_attr('length', indices=[0, -1])
    assert ours.get_attr('marker', indices=[0, 2]) == ['first', 'last']
    assert ours.env_method('scaled_count', 2, indices=[-2]) == [0]
    with pytest.raises(IndexError, match='index -4 is out of range'):
        ours.get_attr('length', indices=[-4])
    dummy.close()


def test_over_long_action_batches_are_refused(make_sb3_vec_env):
    ours = make_sb3_vec_env(testing.counting_envs())
    ours.reset()
    # DummyVecEnv steps with the first rows; a longer batch is a mistake here.
    with pytest.raises(ValueError, match=r'one action per environment \(3\), got a batch of 4'):
        ours.step(np.zeros(4, np.int64))


def test_seeds_and_options_apply_at_the_next_reset(make_sb3_vec_env):
    ours, dummy = make_sb3_vec_env(testing.counting_envs()), DummyVecEnv(testing.counting_envs())
    for env in (ours, dummy):
        env.seed(3)
        env.set_options([{'level': 1}, {}, {'level': 1}])
    testing.assert_identical(ours.reset(), dummy.reset())
    testing.assert_identical(ours.reset_infos, dummy.reset_infos)
    assert ours.reset_infos[1] == {'options': None}  # Empty options reset with none.
    assert ours.get_attr('np_random_seed') == [3, 4, 5]
    for env in (ours, dummy):
        env.set_options({'level': 2})
        env.reset()
    testing.assert_identical(ours.reset_infos, dummy.reset_infos)
    assert ours.get_attr('np_random_seed') == dummy.get_attr('np_random_seed')


def test_env_method_attributes_and_wrappers_reach_the_environments(make_sb3_vec_env):
    env_fns = [functools.partial(testing.counting_in_time_limit, length) for length in (3, 4, 5)]
    ours, dummy = make_sb3_vec_env(env_fns), DummyVecEnv(env_fns)
    for env in (ours, dummy):
        env.reset()
        env.step(np.array([1, 1, 1]))
    assert ours.env_method('scaled_count', 2) == dummy.env_method('scaled_count', 2) == [2] * 3
    assert ours.env_method('scaled_count', factor=3, indices=[2, 0]) == [3, 3]
    assert ours.get_attr('length') == dummy.get_attr('length') == [3, 4, 5]
    assert ours.get_attr('length', indices=1) == [4]
    assert ours.has_attr('length') and not ours.has_attr('no_such_attribute')
    with pytest.raises(AttributeError, match='no_such_attribute'):
        ours.get_attr('no_such_attribute')
    for env in (ours, dummy):
        env.set_attr('marker', 'here', indices=[1])
    assert ours.get_attr('marker', indices=[1]) == dummy.get_attr('marker', indices=[1])
    for wrapper in (gymnasium.wrappers.TimeLimit, gymnasium.Wrapper, Monitor):
        assert ours.env_is_wrapped(wrapper) == dummy.env_is_wrapped(wrapper), wrapper
    assert ours.env_is_wrapped(gymnasium.wrappers.TimeLimit, indices=0) == [True]
    dummy.close()


def test_renders_frames_where_the_environments_run(make_sb3_vec_env):
    make = functools.partial(gymnasium.make, 'CartPole-v1', render_mode='rgb_array')
    ours, dummy = make_sb3_vec_env([make] * 2), DummyVecEnv([make] * 2)
    assert ours.render_mode == dummy.render_mode == 'rgb_array'
    for env in (ours, dummy):
        env.seed(4)
        env.reset()
    testing.assert_identical(ours.get_images(), dummy.get_images())
    testing.assert_identical(ours.render(), dummy.render())
    dummy.close()


def test_ppo_learns_exactly_as_on_dummy_vec_env(backend):
    if backend.variant not in ('parallel', 'process'):
        pytest.skip('The equivalence tests above cover the other backends step by step.')
    torch = pytest.importorskip('torch')
    torch.set_num_threads(1)
    env_fns = [testing.SHORT_TASKS['CartPole-v1']] * 2
    parameters = []
    for env in (sb3_vec_env.SB3VecEnv(env_fns, backend.name, **backend.options),
                DummyVecEnv(env_fns)):
        model = stable_baselines3.PPO(
            'MlpPolicy', env, n_steps=32, batch_size=32, n_epochs=2, seed=0, device='cpu')
        model.learn(128)
        parameters.append([p.detach().numpy().copy() for p in model.policy.parameters()])
        env.close()
    testing.assert_identical(parameters[0], parameters[1])


def test_import_needs_no_tensorflow():
    # SB3 imports TensorBoard, which imports TensorFlow when it is installed;
    # with TensorFlow hidden, the adapter must still import and step.
    code = (
        'import sys\n'
        'class HideTensorFlow:\n'
        '    def find_spec(self, name, path=None, target=None):\n'
        '        if name.split(".")[0] == "tensorflow":\n'
        '            raise ImportError("hidden")\n'
        'sys.meta_path.insert(0, HideTensorFlow())\n'
        'import gymnasium\n'
        'from agents.tools import SB3VecEnv, VectorEnv\n'
        'env = SB3VecEnv([lambda: gymnasium.make("CartPole-v1")] * 2, backend="inprocess")\n'
        'env.reset()\n'
        'env.step([0, 1])\n'
        'env.close()\n'
        'assert "tensorflow" not in sys.modules\n')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=testing.REPOSITORY)


def test_missing_sb3_is_explained():
    code = (
        'import sys\n'
        'sys.modules["stable_baselines3"] = None\n'
        'try:\n'
        '    from agents.tools import SB3VecEnv\n'
        'except ImportError as error:\n'
        '    assert "pip install -e \'.[sb3]\'" in str(error), error\n'
        'else:\n'
        '    raise AssertionError("no ImportError")\n')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=testing.REPOSITORY)
