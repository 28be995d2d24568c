"""The batch contract (`contract.BaseBatchEnv`), tested on every backend."""

import functools
import os
import signal
import threading
import time

import gymnasium
from gymnasium.vector import utils as vector_utils
import numpy as np
import pytest

from agents.tools import envs
from agents.tools import nested
from agents.tools.envs import access
from agents.tools.envs import errors
from agents.tools.envs import testing
from agents.tools.envs import waiting

# Backend (and variant) -> function of the constructors building the batch: the
# variants the adapters are tested on, and envpool.
_BACKENDS = {
    variant: functools.partial(envs.BACKENDS[name], **options)
    for variant, (name, options) in testing.BACKEND_VARIANTS.items()}
_BACKENDS['envpool'] = envs.BACKENDS['envpool']
# Backends that host any environment and can stop one that hangs.
_PROCESS_BACKENDS = ('process', 'parallel', 'parallel, polling workers', 'ray')


def _skip_unless_any_environment(make_batch):
    if make_batch.backend == 'envpool':
        pytest.skip('envpool hosts only the tasks it ships (see envpool_test.py).')


def _skip_unless_workers_can_be_stopped(make_batch):
    if make_batch.backend not in _PROCESS_BACKENDS:
        pytest.skip('Nothing can stop an environment that hangs in this process.')


@pytest.fixture(params=[
    pytest.param(backend, marks=[pytest.mark.integration] if backend == 'ray' else [])
    for backend in _BACKENDS])
def make_batch(request):
    """Function of the constructors that builds a batch of the backend.

    Closes the batches after the test and checks that no process is left.
    """
    if request.param == 'ray':
        request.getfixturevalue('ray_cluster')
    if request.param == 'envpool':
        pytest.importorskip('envpool', reason="pip install -e '.[envpool]' to test it.")
    batches = []
    children = testing.child_pids()

    def make(constructors, **options):
        batches.append(_BACKENDS[request.param](constructors, **options))
        return batches[-1]

    make.backend = request.param
    yield make
    for batch in batches:
        batch.close()
    assert not testing.new_children(children), 'worker processes were left behind'


def _pendulum():
    return gymnasium.make('Pendulum-v1', max_episode_steps=13)


def _cartpole():
    return gymnasium.make('CartPole-v1')


def test_every_backend_is_tested():
    assert set(envs.BACKENDS) <= set(_BACKENDS)


def test_step_and_reset_return_batches_of_the_documented_types(make_batch):
    batch = make_batch([_pendulum] * 3)
    single = _pendulum()
    assert len(batch) == 3
    assert batch.observation_space == single.observation_space
    assert batch.action_space == single.action_space
    observ, infos = batch.reset()
    assert observ.shape == (3, 3) and observ.dtype == np.float32
    assert isinstance(infos, tuple) and len(infos) == 3
    observ, reward, terminated, truncated, infos = batch.step(np.zeros((3, 1), np.float32))
    assert observ.shape == (3, 3) and observ.dtype == np.float32
    assert reward.shape == (3,) and reward.dtype == np.float32
    assert terminated.dtype == bool and truncated.dtype == bool and terminated.shape == (3,)
    assert isinstance(infos, tuple) and all(isinstance(info, dict) for info in infos)
    assert len(infos) == 3


@pytest.mark.parametrize('constructor', [_pendulum, _cartpole])
def test_same_transitions_as_gymnasium_for_same_seeds_and_actions(make_batch, constructor):
    if make_batch.backend == 'envpool':
        pytest.skip('envpool draws other initial states (envpool_test.py starts both alike).')
    size, seeds = 4, [10, 11, 12, 13]
    batch = make_batch([constructor] * size)
    expected_envs = [constructor() for _ in range(size)]
    observ, _ = batch.reset(seeds=seeds)
    expected = [env.reset(seed=seed)[0] for env, seed in zip(expected_envs, seeds)]
    np.testing.assert_array_equal(observ, expected)
    batch.action_space.seed(0)
    episodes_ended = 0
    for _ in range(40):
        actions = np.stack([batch.action_space.sample() for _ in range(size)])
        result = batch.step(actions)
        transitions = [env.step(action) for env, action in zip(expected_envs, actions)]
        for value, expected_value in zip(result[:4], list(zip(*transitions))[:4]):
            np.testing.assert_array_equal(value, np.asarray(expected_value, value.dtype))
        done = np.flatnonzero(result[2] | result[3])
        episodes_ended += len(done)
        if len(done):
            observ, _ = batch.reset(done)
            np.testing.assert_array_equal(
                observ, [expected_envs[index].reset()[0] for index in done])
    assert episodes_ended >= size


def test_reset_of_subsets_in_the_order_given_and_with_seeds(make_batch):
    batch = make_batch([_pendulum] * 4)
    if make_batch.backend == 'envpool':
        with pytest.raises(ValueError, match='cannot reseed'):
            batch.reset(seeds=[0, 1, 2, 3])
        first, _ = batch.reset()
        batch.step(np.zeros((4, 1), np.float32))
        again, _ = batch.reset(np.array([3, 1]))
        assert again.shape == (2, 3) and not np.allclose(again, first[[3, 1]])
        assert batch.reset([])[0].shape == (0, 3)
        return
    first, _ = batch.reset(seeds=[0, 1, 2, 3])
    again, _ = batch.reset(np.array([3, 1]), seeds=np.array([3, 1]))
    np.testing.assert_array_equal(again, first[[3, 1]])
    other, _ = batch.reset([2], seeds=[7])
    np.testing.assert_array_equal(other[0], _pendulum().reset(seed=7)[0])
    empty, infos = batch.reset([])
    assert empty.shape == (0, 3) and empty.dtype == np.float32 and infos == ()


def test_step_of_some_environments_steps_only_those_in_the_order_given(make_batch):
    _skip_unless_any_environment(make_batch)
    batch = make_batch([functools.partial(testing.CountingEnv, length=2)] * 3)
    batch.reset()
    observ, reward, terminated, truncated, infos = batch.step([1, 2], indices=[2, 0])
    np.testing.assert_array_equal(observ, [[1, 1], [1, 1]])
    np.testing.assert_array_equal(reward, [1, 1])
    assert observ.dtype == np.float64 and reward.dtype == np.float32
    assert infos == ({}, {})
    observ, _, terminated, _, infos = batch.step([0, 0, 0])
    np.testing.assert_array_equal(observ[:, 0], [2, 1, 2])
    np.testing.assert_array_equal(terminated, [True, False, True])
    assert [info.get('count') for info in infos] == [2, None, 2]
    # The environments that ended are reset and stepped while the other is not.
    np.testing.assert_array_equal(batch.reset([2, 0])[0], np.zeros((2, 2)))
    observ, _, terminated, truncated, _ = batch.step(np.array([0, 0]), np.array([0, 2]))
    np.testing.assert_array_equal(observ[:, 0], [1, 1])
    assert not terminated.any() and not truncated.any()
    np.testing.assert_array_equal(batch.step([0], [1])[2], [True])
    empty = batch.step(np.zeros(0, np.int64), [])
    assert empty[0].shape == (0, 2) and empty[1].shape == (0,) and empty[4] == ()
    with pytest.raises(ValueError, match='twice'):
        batch.step([0, 0], [1, 1])
    with pytest.raises(ValueError, match=r'one action per environment \(1\), got a batch of 2'):
        batch.step([0, 0], [1])
    with pytest.raises(ValueError, match='index 3 is out of range'):
        batch.step([0], [3])


def _beside_its_environments(make_batch, constructor, size):
    """A batch of `size` environments and the same environments alone, reset alike.

    Returns:
      The batch, with its action space seeded, and the list of environments.
    """
    _skip_unless_any_environment(make_batch)
    batch = make_batch([constructor] * size)
    expected_envs = [constructor() for _ in range(size)]
    batch.reset(seeds=range(size))
    for seed, env in enumerate(expected_envs):
        env.reset(seed=seed)
    batch.action_space.seed(0)
    return batch, expected_envs


@pytest.mark.parametrize('constructor', [
    testing.SHORT_TASKS['CartPole-v1'], functools.partial(testing.CountingEnv, length=3)])
def test_steps_of_changing_subsets_match_the_environments_stepped_alone(
        make_batch, constructor):
    # As Gymnasium's NEXT_STEP autoreset steps them: environments that ended are
    # reset while others are stepped, in random orders, so some processes
    # step all of their environments, some a few and some none.
    size = 6
    batch, expected_envs = _beside_its_environments(make_batch, constructor, size)
    random = np.random.default_rng(0)
    ended = np.zeros(size, bool)
    for _ in range(60):
        chosen = random.permutation(size)[:random.integers(1, size + 1)]
        reset, stepped = chosen[ended[chosen]], chosen[~ended[chosen]]
        observ, infos = batch.reset(reset)
        expected = [expected_envs[index].reset() for index in reset]
        np.testing.assert_array_equal(
            observ, np.reshape([value for value, _ in expected], observ.shape))
        assert infos == tuple(info for _, info in expected)
        ended[reset] = False
        actions = np.array([batch.action_space.sample() for _ in stepped], np.int64)
        result = batch.step(actions, stepped)
        transitions = [
            expected_envs[index].step(action) for index, action in zip(stepped, actions)]
        for value, expected_value in zip(result[:4], list(zip(*transitions))[:4]):
            np.testing.assert_array_equal(value, np.asarray(expected_value, value.dtype))
        assert result[4] == tuple(transition[4] for transition in transitions)
        ended[stepped] = result[2] | result[3]


@pytest.mark.parametrize('constructor', [
    testing.SHORT_TASKS['CartPole-v1'], functools.partial(testing.CountingEnv, length=3)])
def test_step_or_reset_matches_the_environments_reset_or_stepped_alone(make_batch, constructor):
    # Resets the environments that ended (reset ahead by the parallel backend)
    # and, on some steps, others too, which backends must reset on the spot.
    size = 6
    batch, expected_envs = _beside_its_environments(make_batch, constructor, size)
    random = np.random.default_rng(0)
    ended = np.zeros(size, bool)
    for step in range(60):
        reset_mask = ended | (random.random(size) < 0.1 if step % 3 == 0 else False)
        actions = np.array([batch.action_space.sample() for _ in range(size)], np.int64)
        observ, reward, terminated, truncated, infos = batch.step_or_reset(actions, reset_mask)
        for index, env in enumerate(expected_envs):
            if reset_mask[index]:
                first_observ, info = env.reset()
                expected = first_observ, 0.0, False, False, info
            else:
                expected = env.step(actions[index])
            np.testing.assert_array_equal(observ[index], np.asarray(expected[0], observ.dtype))
            assert (reward[index], terminated[index], truncated[index]) == expected[1:4]
            assert infos[index] == expected[4]
        assert reward.dtype == np.float32 and len(infos) == size
        ended = terminated | truncated


def test_step_or_reset_refuses_a_bad_mask(make_batch):
    _skip_unless_any_environment(make_batch)
    batch = make_batch([testing.CountingEnv] * 2)
    batch.reset()
    with pytest.raises(TypeError, match='reset_mask must be a bool array'):
        batch.step_or_reset([0, 0], [1, 0])
    with pytest.raises(ValueError, match=r'one entry per environment, shape \(2,\)'):
        batch.step_or_reset([0, 0], np.zeros(3, bool))
    with pytest.raises(ValueError, match='one action per environment'):
        batch.step_or_reset([0], np.array([True, False]))
    np.testing.assert_array_equal(
        batch.step_or_reset([0, 0], np.zeros(2, bool))[0][:, 0], [1, 1])


def test_rewards_are_float32_or_exact_float64(make_batch):
    if make_batch.backend == 'envpool':
        pytest.skip('envpool computes rewards in float32 and cannot reseed (envpool_test.py).')
    batch = make_batch([_pendulum] * 2)
    expected_envs = [_pendulum() for _ in range(2)]
    batch.reset(seeds=[3, 4])
    for env, seed in zip(expected_envs, [3, 4]):
        env.reset(seed=seed)
    actions = np.array([[0.5], [-1.5]], np.float32)
    expected = [env.step(action)[1] for env, action in zip(expected_envs, actions)]
    reward = batch.step(actions)[1]
    assert reward.dtype == np.float32
    np.testing.assert_array_equal(reward, np.float32(expected))
    batch.reward_dtype = np.float64
    expected = [env.step(action)[1] for env, action in zip(expected_envs, actions)]
    reward = batch.step(actions)[1]
    assert reward.dtype == np.float64 and reward.tolist() == expected
    assert np.float32(expected[0]) != expected[0]  # float32 would have rounded.


def test_apply_and_call_reach_single_environments_through_wrappers(make_batch):
    _skip_unless_any_environment(make_batch)
    batch = make_batch([testing.counting_in_time_limit] * 3)
    assert batch.reaches_environments
    batch.reset()
    batch.step([0, 1], indices=[1, 2])
    assert batch.apply(access.get_attribute, 'count') == [0, 1, 1]
    assert batch.apply(access.get_attribute, 'count', indices=[2, 0]) == [1, 0]
    assert batch.apply(access.get_attribute, 'unwrapped.length', indices=[0]) == [4]
    assert batch.call('scaled_count', 5) == [0, 5, 5]
    assert batch.call('length') == [4, 4, 4]  # Not callable: read.
    batch.apply(access.set_attribute, 'length', 9, indices=[1])
    assert batch.call('length') == [4, 9, 4]  # Set on the environment that has it,
    assert batch.apply(access.get_attribute, 'env.length') == [4, 9, 4]
    batch.apply(setattr, 'marker', 'outer', indices=[0])
    assert batch.apply(access.get_attribute, 'marker', indices=[0]) == ['outer']
    assert batch.apply(access.is_wrapped, 'gymnasium.wrappers.common.TimeLimit') == [True] * 3
    assert batch.apply(access.is_wrapped, 'gymnasium.wrappers.common.Autoreset') == [False] * 3
    with pytest.raises((errors.WorkerError, AttributeError), match='no_such_attribute'):
        batch.call('no_such_attribute')
    with pytest.raises(ValueError, match='index 3 is out of range'):
        batch.apply(access.get_attribute, 'count', indices=[3])
    np.testing.assert_array_equal(batch.step([0, 0, 0])[0][:, 0], [1, 2, 2])  # Still usable.


def test_bad_input_is_refused_before_any_environment_steps(make_batch):
    batch = make_batch([_cartpole] * 3)
    batch.reset()
    with pytest.raises(ValueError, match=r'one action per environment \(3\), got a batch of 2'):
        batch.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match=r'shape \(\)'):
        batch.step(np.zeros((3, 2), np.int64))
    with pytest.raises(TypeError, match='integer actions'):
        batch.step([0.5, 1.0, 0.0])
    with pytest.raises(TypeError, match='got a scalar') as caught:
        batch.step(1)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ValueError, match='index 3 is out of range'):
        batch.reset([3])
    with pytest.raises(ValueError, match='2 seeds for 1'):
        batch.reset([0], seeds=[1, 2])
    batch.step(np.zeros(3, np.int64))  # Still usable.


def test_bad_constructors_and_different_spaces_are_refused(make_batch):
    with pytest.raises(ValueError, match='at least one environment'):
        make_batch([])
    with pytest.raises(TypeError, match='zero-argument callable'):
        make_batch([_pendulum()])
    with pytest.raises(ValueError, match='same observation space') as caught:
        make_batch([_pendulum, _cartpole])
    assert isinstance(caught.value, RuntimeError)  # What Gymnasium raises.


def test_exception_in_an_environment_names_it_and_the_batch_recovers(make_batch):
    _skip_unless_any_environment(make_batch)
    batch = make_batch([functools.partial(testing.CountingEnv, fail_at_step=2)] * 2)
    batch.reset()
    batch.step([0, 0])
    with pytest.raises((errors.WorkerError, ValueError), match='step 2 failed on purpose'):
        batch.step([0, 0])
    batch.reset()
    observ = batch.step([0, 0])[0]
    np.testing.assert_array_equal(observ, np.ones((2, 2)))


def test_exception_in_a_constructor_is_raised(make_batch):
    def broken():
        raise KeyError('no such level')

    with pytest.raises((errors.WorkerError, KeyError), match='no such level'):
        make_batch([_pendulum, broken])


@pytest.mark.parametrize('kind', ['dict', 'tuple'])
def test_nested_observations_are_batched_as_gymnasium_batches_them(make_batch, kind):
    _skip_unless_any_environment(make_batch)
    constructor = functools.partial(testing.NestedEnv, kind)
    batch = make_batch([constructor] * 3)
    expected_envs = [constructor() for _ in range(3)]
    space = expected_envs[0].observation_space

    def expected_batch(values):
        if not values:
            return vector_utils.create_empty_array(space, 0)
        return vector_utils.concatenate(
            space, values, vector_utils.create_empty_array(space, len(values)))

    def assert_equal(batched, expected):
        assert type(batched) is type(expected)
        nested.map(np.testing.assert_array_equal, batched, expected)
        for value, reference in zip(nested.flatten(batched), nested.flatten(expected)):
            assert value.dtype == reference.dtype and value.shape == reference.shape

    observ, _ = batch.reset(seeds=[1, 2, 3])
    assert_equal(observ, expected_batch(
        [env.reset(seed=seed)[0] for env, seed in zip(expected_envs, [1, 2, 3])]))
    for _ in range(6):
        result = batch.step(np.zeros((3, 2), np.float32))
        transitions = [env.step(np.zeros(2, np.float32)) for env in expected_envs]
        assert_equal(result[0], expected_batch([transition[0] for transition in transitions]))
        done = np.flatnonzero(result[2])
        if len(done):
            observ, _ = batch.reset(done)
            assert_equal(observ, expected_batch([expected_envs[index].reset()[0]
                                                 for index in done]))
    assert_equal(batch.reset([])[0], expected_batch([]))


def test_dict_spaces_with_unsorted_keys_keep_every_value_under_its_key(make_batch):
    # Keys in the order given, not sorted, of equal and of different shapes,
    # through resets of all and of some, steps of all and of some, and
    # step_or_reset; actions are Dict batches of such keys too.
    _skip_unless_any_environment(make_batch)
    size = 4
    batch = make_batch([testing.KeyedEnv] * size)
    expected_envs = [testing.KeyedEnv() for _ in range(size)]
    keys = ['observation', 'desired_goal', 'achieved_goal']
    assert list(batch.observation_space.spaces) == keys

    def assert_batch(observ, values, what):
        assert list(observ) == keys, what
        for key, space in batch.observation_space.spaces.items():
            expected = np.array([value[key] for value in values], space.dtype)
            assert observ[key].dtype == space.dtype, (what, key)
            np.testing.assert_array_equal(observ[key], expected.reshape(observ[key].shape),
                                          err_msg=f'{what}, key {key}', strict=True)

    observ, _ = batch.reset(seeds=range(size))
    assert_batch(observ, [env.reset(seed=seed)[0] for seed, env in enumerate(expected_envs)],
                 'reset')
    batch.action_space.seed(0)
    random = np.random.default_rng(0)
    for step in range(30):
        ended = np.array([env.count >= env.length for env in expected_envs])
        actions = [batch.action_space.sample() for _ in range(size)]
        batched = {key: np.stack([action[key] for action in actions])
                   for key in batch.action_space.spaces}
        if step % 2:
            mask = ended | (random.random(size) < 0.2)
            observ = batch.step_or_reset(batched, mask)[0]
            assert_batch(observ, [
                env.reset()[0] if mask[index] else env.step(actions[index])[0]
                for index, env in enumerate(expected_envs)], f'step_or_reset at {step}')
            continue
        reset = np.flatnonzero(ended)[::-1]
        assert_batch(batch.reset(reset)[0], [expected_envs[index].reset()[0] for index in reset],
                     f'reset of {reset} at {step}')
        stepped = random.permutation(size)[:random.integers(1, size + 1)]
        observ = batch.step({key: value[stepped] for key, value in batched.items()}, stepped)[0]
        assert_batch(observ, [expected_envs[index].step(actions[index])[0] for index in stepped],
                     f'step of {stepped} at {step}')


# Spaces whose values have no fixed shape and dtype, and one that holds such a space.
_VARIABLE_SIZE_SPACES = {
    'Text': gymnasium.spaces.Text(5),
    'Sequence': gymnasium.spaces.Sequence(gymnasium.spaces.Box(0, 1, (2,), np.float32)),
    'Graph': gymnasium.spaces.Graph(
        gymnasium.spaces.Box(0, 1, (2,), np.float32), gymnasium.spaces.Discrete(3)),
    'OneOf': gymnasium.spaces.OneOf(
        [gymnasium.spaces.Discrete(2), gymnasium.spaces.Box(0, 1, (2,), np.float32)]),
    'Dict with Text': gymnasium.spaces.Dict(
        box=gymnasium.spaces.Box(0, 1, (2,), np.float32), text=gymnasium.spaces.Text(3)),
}


@pytest.mark.parametrize('name', list(_VARIABLE_SIZE_SPACES))
def test_spaces_without_fixed_shapes_are_batched_as_objects_or_refused_in_one_line(
        make_batch, name):
    _skip_unless_any_environment(make_batch)
    space = _VARIABLE_SIZE_SPACES[name]
    constructor = functools.partial(testing.SampleEnv, space)
    if make_batch.backend.startswith('parallel'):
        with pytest.raises(TypeError) as caught:
            make_batch([constructor] * 2)
        message = str(caught.value)
        assert '\n' not in message and 'no fixed shape and dtype' in message
        assert 'inprocess, process and ray backends take' in message
        return
    batch = make_batch([constructor] * 3)
    expected_envs = [constructor() for _ in range(3)]
    layout = envs.batching.BatchLayout(space, 'observation')
    observ, _ = batch.reset(seeds=[1, 2, 3])
    expected = [env.reset(seed=seed)[0] for env, seed in zip(expected_envs, [1, 2, 3])]
    testing.assert_identical(layout.as_tuples(observ), vector_utils.concatenate(
        space, expected, vector_utils.create_empty_array(space, 3)))
    actions = [space.sample() for _ in range(3)]
    result = batch.step(layout.stack(actions))
    for index, env in enumerate(expected_envs):
        expected_observ, *_, info = env.step(actions[index])
        testing.assert_identical(layout.row(result[0], index), expected_observ)
        testing.assert_identical(result[4][index]['action'], info['action'])


def test_list_observations_and_float_actions_for_integer_boxes(make_batch):
    # Observations of Python lists for a Box, as some environments return them,
    # and the float actions policies for Box spaces emit, for an integer Box.
    _skip_unless_any_environment(make_batch)
    space = gymnasium.spaces.Box(-10, 10, (2,), np.int64)
    batch = make_batch([functools.partial(testing.SampleEnv, space, as_lists=True)] * 2)
    observ, _ = batch.reset(seeds=[0, 1])
    expected = [testing.SampleEnv(space).reset(seed=seed)[0] for seed in (0, 1)]
    np.testing.assert_array_equal(observ, expected, strict=True)
    infos = batch.step(np.array([[1.7, -2.5], [0.2, 9.9]]))[4]
    np.testing.assert_array_equal(  # Converted as NumPy converts, toward zero.
        [info['action'] for info in infos], np.array([[1, -2], [0, 9]]), strict=True)
    with pytest.raises(ValueError, match='must be finite'):
        batch.step(np.array([[np.nan, 0.0], [0.0, 0.0]]))


def test_close_is_idempotent_and_final(make_batch):
    with make_batch([_pendulum] * 2) as batch:
        batch.reset()
    assert batch.closed
    batch.close()
    with pytest.raises(RuntimeError, match='closed'):
        batch.step(np.zeros((2, 1), np.float32))
    with pytest.raises(RuntimeError, match='closed'):
        batch.reset()


@pytest.mark.parametrize('method', ['step', 'reset'])
def test_hung_environment_times_out_naming_it_and_leaves_nothing_behind(make_batch, method):
    _skip_unless_workers_can_be_stopped(make_batch)
    waiting.watch_signals()  # Its pipe stays open for the process, like a module.
    fds = testing.open_fds()
    segments = testing.shared_memory_segments()
    hung = functools.partial(testing.CountingEnv, hang_in=method)
    batch = make_batch([testing.CountingEnv, hung], timeout=1.0)
    segments = testing.shared_memory_segments() - segments  # The batch's own.
    assert segments or 'parallel' not in make_batch.backend
    if method == 'step':
        batch.reset()
    with pytest.raises(errors.WorkerTimeoutError, match='1.0 s') as caught:
        batch.step([0, 0]) if method == 'step' else batch.reset()
    message = str(caught.value)
    assert 'environment 1' in message and 'CountingEnv' in message  # The environment,
    assert ('worker' if make_batch.backend != 'ray' else 'actor') in message  # its host,
    assert f'{method}()' in message  # and the call.
    assert batch.closed
    assert not any(os.path.exists(path) for path in segments)
    if make_batch.backend != 'ray':  # Ray keeps connections of its own.
        assert testing.open_fds() <= fds


def test_ctrl_c_stops_a_wait_for_a_hung_worker_in_another_thread(make_batch):
    _skip_unless_workers_can_be_stopped(make_batch)
    # A thread waits as TensorFlow's numpy_function does while the main thread
    # is inside session.run, where no Python signal handler can run.
    batch = make_batch([functools.partial(testing.CountingEnv, hang_in='step')] * 2)
    batch.reset()
    outcome = []

    def step():
        try:
            batch.step([0, 0])
        except BaseException as error:  # Handed to the test.
            outcome.append(error)

    received = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        thread = threading.Thread(target=step)
        thread.start()
        start = time.monotonic()
        # Until the thread waits, a signal goes to its handler only; send until it stops.
        while thread.is_alive() and time.monotonic() - start < 30:
            os.kill(os.getpid(), signal.SIGINT)
            thread.join(0.5)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert received and not thread.is_alive()
    assert isinstance(outcome[0], errors.WaitInterrupted), outcome
    assert 'SIGINT' in str(outcome[0])
    assert batch.closed
