"""Tests for stepping batches of environments inside the graph."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from agents.tools import in_graph_batch_env
from agents.tools import in_graph_env
from agents.tools.envs import batch_env
from agents.tools.envs import testing


def _batch(name, count):
    envs = [gym.make(name) for _ in range(count)]
    for index, env in enumerate(envs):
        env.reset(seed=index)
    return batch_env.BatchEnv(envs, blocking=True)


def _run_step(env, action):
    """Build an op that steps and then reads the state variables."""
    with tf.control_dependencies([env.simulate(action)]):
        return [tf.identity(variable.read_value()) for variable in (
            env.observ, env.action, env.reward, env.done, env.terminated)]


def test_variables_have_parsed_shapes_and_dtypes_and_are_not_trainable():
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(_batch('CartPole-v1', 3))
        assert env.observ.shape == (3, 4) and env.observ.dtype == tf.float32
        assert env.action.shape == (3,) and env.action.dtype == tf.int32
        assert env.reward.dtype == tf.float32 and env.done.dtype == tf.bool
        assert env.terminated.shape == (3,)
        assert not tf.compat.v1.trainable_variables()
        names = [variable.name for variable in tf.compat.v1.global_variables()]
        assert all(name.startswith(in_graph_env.VARIABLE_SCOPE + '/') for name in names)
        assert len(env) == 3


def test_step_writes_the_batch_results_into_variables():
    with tf.Graph().as_default():
        python_batch = _batch('Pendulum-v1', 2)
        env = in_graph_batch_env.InGraphBatchEnv(python_batch)
        action = tf.compat.v1.placeholder(tf.float32, [2, 1])
        reset = env.reset()
        step = _run_step(env, action)
        reference = [gym.make('Pendulum-v1') for _ in range(2)]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            python_batch.reset(seeds=[4, 5])
            [each.reset(seed=seed) for each, seed in zip(reference, [4, 5])]
            actions = np.array([[0.5], [-1.0]], np.float32)
            observ, stored_action, reward, done, terminated = sess.run(
                step, {action: actions})
            expected = [each.step(act) for each, act in zip(reference, actions)]
            np.testing.assert_allclose(observ, [each[0] for each in expected], rtol=1e-6)
            np.testing.assert_allclose(reward, [each[1] for each in expected], rtol=1e-6)
            np.testing.assert_allclose(stored_action, actions)
            assert not done.any() and not terminated.any()
            first = sess.run(reset)
            assert first.shape == (2, 3)


def test_done_and_terminated_follow_the_episode_end():
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(_batch('CartPole-v1', 2))
        reset_all = env.reset()
        reset_first = env.reset([0])
        # Always pushing right ends CartPole within a few dozen steps.
        step = _run_step(env, tf.ones([2], tf.int32))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            assert sess.run(env.done).all()  # Done before the first reset.
            sess.run(reset_all)
            for _ in range(100):
                _, _, _, done, terminated = sess.run(step)
                if done.all():
                    break
            assert done.all() and terminated.all()
            sess.run(reset_first)
            done, terminated = sess.run([env.done, env.terminated])
            assert list(done) == [False, True] and list(terminated) == [False, True]


def test_nan_action_is_reported():
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(_batch('Pendulum-v1', 1))
        step = env.simulate(tf.constant([[np.nan]], tf.float32))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(env.reset())
            with pytest.raises(tf.errors.InvalidArgumentError, match='action'):
                sess.run(step)


def test_single_in_graph_env_steps_and_resets():
    with tf.Graph().as_default():
        python_env = gym.make('Pendulum-v1')
        env = in_graph_env.InGraphEnv(python_env)
        assert env.observ.shape == (3,) and env.done.shape == ()
        reset = env.reset()
        with tf.control_dependencies([env.simulate([1.0])]):
            reward = tf.identity(env.reward.read_value())
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            assert sess.run(reset).shape == (3,)
            assert sess.run(reward) <= 0.0  # Pendulum rewards are costs.
            assert env.spec.id == 'Pendulum-v1'


@pytest.mark.integration
def test_ctrl_c_stops_a_session_run_that_waits_for_a_hung_worker():
    # The main thread sits in session.run, where no Python signal handler runs,
    # while numpy_function waits for the worker in a thread of TensorFlow's.
    script = textwrap.dedent('''
        import functools, signal
        import tensorflow as tf
        from agents import tools
        from agents.tools.envs import testing
        if __name__ == '__main__':
            received = []
            signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
            batch = tools.ParallelBatchEnv(
                [functools.partial(testing.CountingEnv, hang_in='reset')] * 2)
            with tf.Graph().as_default():
                reset = tools.InGraphBatchEnv(batch).reset()
                with tf.compat.v1.Session() as sess:
                    sess.run(tf.compat.v1.global_variables_initializer())
                    print(*batch.worker_pids, flush=True)
                    try:
                        sess.run(reset)
                    except tf.errors.OpError as error:
                        signal.signal(signal.SIGINT, signal.SIG_IGN)  # The test sends more.
                        print(
                            'received', bool(received), 'WaitInterrupted' in error.message,
                            batch.closed)
    ''')
    process = subprocess.Popen(
        [sys.executable, '-c', script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONPATH=testing.REPOSITORY))
    try:
        pids = [int(pid) for pid in process.stdout.readline().split()]
        assert pids, process.communicate()[1]
        start = time.monotonic()
        # Signals sent before session.run waits go to the handler only; send until it stops.
        while process.poll() is None and time.monotonic() - start < 50:
            process.send_signal(signal.SIGINT)
            time.sleep(0.5)
        stdout, stderr = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert stdout.splitlines()[-1] == 'received True True True', stdout
    assert testing.wait_until_gone(pids)


def _sample_batch(space, action_space, count=2):
    envs = [testing.SampleEnv(space, action_space=action_space) for _ in range(count)]
    for index, env in enumerate(envs):
        env.reset(seed=index)
    return batch_env.BatchEnv(envs, blocking=True)


@pytest.mark.parametrize('space, shape', [
    (gym.spaces.Discrete(4, start=2), (2,)),
    (gym.spaces.MultiDiscrete([2, 3]), (2, 2)),
    (gym.spaces.MultiBinary(3), (2, 3))])
def test_integer_observations_keep_an_integer_dtype(space, shape):
    with tf.Graph().as_default():
        python_batch = _sample_batch(space, gym.spaces.MultiDiscrete([8, 8]))
        env = in_graph_batch_env.InGraphBatchEnv(python_batch)
        assert env.observ.dtype == tf.int32 and env.observ.shape == shape
        assert env.action.dtype == tf.int32 and env.action.shape == (2, 2)
        reset = env.reset()
        step = _run_step(env, tf.constant([[1, 7], [0, 3]]))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            first = sess.run(reset)
            assert all(space.contains(each.astype(space.dtype)) for each in first)
            observ, action = sess.run(step)[:2]
        assert all(space.contains(each.astype(space.dtype)) for each in observ)
        assert action.tolist() == [[1, 7], [0, 3]]
        assert [each['action'].tolist() for each in python_batch.step(action)[4]] == [
            [1, 7], [0, 3]]


def test_tuple_and_dict_observations_are_nests_of_variables():
    envs = [testing.NestedEnv('dict') for _ in range(2)]
    for index, env in enumerate(envs):
        env.reset(seed=index)
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(batch_env.BatchEnv(envs, blocking=True))
        assert set(env.observ) == {'position', 'sensors'}
        goal, image = env.observ['sensors']
        assert goal.dtype == tf.int32 and goal.shape == (2,)
        assert image.dtype == tf.uint8 and image.shape == (2, 3, 2)
        assert env.observ['position'].dtype == tf.float32
        reset = env.reset(tf.constant([1]))
        with tf.control_dependencies([env.simulate(tf.ones([2, 2]))]):
            after = tf.nest.map_structure(lambda variable: variable.read_value(), env.observ)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            first = sess.run(reset)
            assert first['sensors'][1].shape == (1, 3, 2)
            observ = sess.run(after)
        space = envs[0].observation_space
        for index in range(2):
            assert space.contains({
                'position': observ['position'][index],
                'sensors': (np.int64(observ['sensors'][0][index]), observ['sensors'][1][index])})


@pytest.mark.parametrize('space', [
    gym.spaces.Text(5), gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Text(3)))])
def test_a_space_the_graph_cannot_hold_is_refused_in_one_line_naming_it(space):
    with tf.Graph().as_default():
        with pytest.raises(NotImplementedError) as caught:
            in_graph_batch_env.InGraphBatchEnv(_sample_batch(space, gym.spaces.Discrete(2)))
    message = str(caught.value)
    assert '\n' not in message and 'Text(' in message and 'observation space' in message
