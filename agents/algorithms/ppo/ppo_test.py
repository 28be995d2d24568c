"""Tests for the PPO graph: it acts, collects episodes, and updates its networks."""

import collections
import os
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from agents import tools
from agents.algorithms.ppo import ppo
from agents.scripts import config_schema
from agents.scripts import networks
from agents.tools import process_memory


def _config(**overrides):
    # The environments are mocks; `env` and `steps` only complete the config.
    config = dict(
        env='Pendulum-v1', steps=10, num_agents=2, update_every=2, update_epochs=2,
        max_length=5, policy_layers=(8,), value_layers=(8,), chunk_length=None,
        batch_size=None)
    config.update(overrides)
    return config_schema.make(config)


class _DiscreteActions(gymnasium.ActionWrapper):
    """A mock environment whose actions are three discrete steps: -1, 0 and 1."""

    def __init__(self, env):
        super().__init__(env)
        self.action_space = gymnasium.spaces.Discrete(3)

    def action(self, action):
        return np.full(self.env.action_space.shape, action - 1.0, np.float32)


def _define_graph(config, durations=(5, 5), discrete=False):
    envs = [tools.MockEnvironment((3,), (2,), duration, duration) for duration in durations]
    if discrete:
        envs = [_DiscreteActions(env) for env in envs]
    batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))
    step = tf.compat.v1.train.get_or_create_global_step()
    is_training = tf.compat.v1.placeholder(tf.bool, ())
    should_log = tf.compat.v1.placeholder_with_default(False, ())
    algo = ppo.PPO(batch_env, step, is_training, should_log, config)
    done, score, summary = tools.simulate(batch_env, algo, should_log, False)
    return algo, is_training, should_log, (done, score, summary)


# The graphs `_graph` built last, by its arguments, oldest first. A PPO graph
# holds tens of megabytes; tests next to each other share the few kept.
_GRAPHS = collections.OrderedDict()
_GRAPHS_KEPT = 3


@pytest.fixture(scope='module', autouse=True)
def _drop_graphs():
    """Frees the graphs kept once the module's tests ran."""
    yield
    _GRAPHS.clear()


def _graph(config, durations=(5, 5), discrete=False, seed=None):
    """The graph of `_define_graph` for these arguments, shared by the tests next to each other.

    Building costs seconds, running a few steps a fraction of one. Tests share
    the graph, each in a session of its own, which starts as on a graph just
    built: it initializes the variables, starts the random streams over from
    the graph's seed, and resets every environment at its first step (their
    episodes count as done). Operations a test adds stay unused by the others.

    Returns:
      Tuple of the graph and of what `_define_graph` returns.
    """
    key = (repr(config), durations, discrete, seed)
    if key not in _GRAPHS:
        graph = tf.Graph()
        with graph.as_default():
            if seed is not None:
                tf.compat.v1.set_random_seed(seed)
            _GRAPHS[key] = graph, _define_graph(config, durations, discrete)
        if len(_GRAPHS) > _GRAPHS_KEPT:
            _GRAPHS.popitem(last=False)
    _GRAPHS.move_to_end(key)
    return _GRAPHS[key]


def _session():
    """A session that runs the graph as built, without Grappler's rewrites.

    The rewrites cost seconds at the first run of each graph, longer than most
    of these tests take otherwise.
    """
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return tf.compat.v1.Session(config=config)


def _weights(sess):
    return [sess.run(variable) for variable in tf.compat.v1.trainable_variables()]


def test_update_changes_weights_once_memory_holds_update_every_episodes():
    graph, (algo, is_training, _, step_op) = _graph(_config())
    with graph.as_default():
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = _weights(sess)
            for _ in range(4):  # The episodes are not done yet.
                sess.run(step_op, {is_training: True})
            assert sess.run(algo._memory_index) == 0
            assert all(np.array_equal(a, b) for a, b in zip(before, _weights(sess)))
            sess.run(step_op, {is_training: True})  # Two episodes end: memory full.
            assert sess.run(algo._memory_index) == 0  # Cleared after training.
            after = _weights(sess)
            assert any(not np.array_equal(a, b) for a, b in zip(before, after))


def test_evaluation_acts_greedily_and_does_not_learn():
    graph, (algo, is_training, _, step_op) = _graph(_config())
    with graph.as_default():
        observ = tf.constant(np.ones((2, 3), np.float32))
        action, _ = algo.perform(tf.range(2), observ)
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = _weights(sess)
            for _ in range(10):
                sess.run(step_op, {is_training: False})
            assert all(np.array_equal(a, b) for a, b in zip(before, _weights(sess)))
            first, second = (sess.run(action, {is_training: False}) for _ in range(2))
            np.testing.assert_allclose(first, second)  # The mode, not a sample.
            first, second = (sess.run(action, {is_training: True}) for _ in range(2))
            assert not np.allclose(first, second)


def test_summaries_include_losses_when_logging():
    graph, (_, is_training, should_log, step_op) = _graph(_config())
    with graph.as_default():
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tags = set()
            for _ in range(5):
                summary = sess.run(step_op[2], {is_training: True, should_log: True})
                tags |= {value.tag for value in tf.compat.v1.Summary.FromString(summary).value}
        expected = {
            'mean_score', 'mean_length', 'perform/action', 'training/learning_rate',
            'training/value_loss', 'training/policy_loss', 'training/entropy', 'training/kl',
            'training/penalty', 'training/kl_change', 'training/skipped_updates'}
        assert expected <= tags, sorted(expected - tags)
        assert any(tag.startswith('weights_policy/') for tag in tags)


def _weights_before_and_after_training(config, durations=(5, 5), steps=5):
    graph, (_, is_training, _, step_op) = _graph(config, durations)
    with graph.as_default():
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = _weights(sess)
            for _ in range(steps):
                sess.run(step_op, {is_training: True})
            return before, _weights(sess)


def test_recurrent_policy_trains_on_chunks():
    config = _config(network=networks.recurrent_gaussian, chunk_length=2, batch_size=2)
    before, after = _weights_before_and_after_training(config, durations=(3, 5))
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))


def test_truncated_episode_bootstraps_from_its_last_observation():
    with tf.Graph().as_default():
        config = _config(max_length=3)
        truncated = tools.wrappers.LimitDuration(tools.MockEnvironment((3,), (2,), 9, 9), 3)
        terminated = tools.MockEnvironment((3,), (2,), 3, 3)
        batch_env = tools.InGraphBatchEnv(tools.BatchEnv([truncated, terminated], True))
        algo = ppo.PPO(
            batch_env, tf.compat.v1.train.get_or_create_global_step(), tf.constant(True),
            tf.constant(False), config)
        done, _, _ = tools.simulate(batch_env, algo, False, False)
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(3):
                sess.run(done)
            # The third step ended both episodes and filled the memory; the
            # bootstrap values stay in memory until the next update.
            truncated_value, terminated_value = sess.run(algo._bootstrap)
            assert truncated_value != 0.0
            assert terminated_value == 0.0


def test_clipped_actions_train_to_finite_weights():
    # A wide policy sends most actions beyond the bounds, onto their probability mass.
    config = _config(action_bounds=(-1.0, 1.0), init_std=3.0)
    before, after = _weights_before_and_after_training(config)
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))
    assert all(np.isfinite(weight).all() for weight in after)


def _train_steps(config, durations, steps, seed=None, discrete=False, global_step=0):
    """Run training steps in a fresh session; return the algorithm's state and the weights.

    The global step, which the learning rate schedule reads, holds `global_step`.
    """
    graph, (algo, is_training, should_log, step_op) = _graph(config, durations, discrete, seed)
    with graph.as_default():
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.train.get_global_step().assign(global_step))
            before, summaries = _weights(sess), []
            for _ in range(steps):
                summary = sess.run(step_op[2], {is_training: True, should_log: True})
                summaries.append(tf.compat.v1.Summary.FromString(summary))
            values = {
                value.tag: value.simple_value for summary in summaries
                for value in summary.value if value.HasField('simple_value')}
            return dict(
                before=before, after=_weights(sess), penalty=sess.run(algo._update.penalty),
                summary=values,
                names=[variable.name for variable in tf.compat.v1.trainable_variables()])


@pytest.mark.parametrize('kl_target, bound', [(1e6, 0.5), (1e-9, 2.0)])
def test_kl_penalty_stays_within_its_bounds(kl_target, bound):
    # Episodes of two steps fill the memory every second step: 12 updates. A
    # target far above or below every change moves the penalty by 1.5 each time.
    config = _config(
        kl_target=kl_target, kl_penalty_bounds=(0.5, 2.0), learning_rate=0.01, update_epochs=1)
    result = _train_steps(config, durations=(2, 2), steps=24)
    assert result['penalty'] == pytest.approx(bound)


@pytest.mark.parametrize('schedule, learning_rate', [('constant', 1e-4), ('linear', 2e-5)])
def test_updates_train_with_the_scheduled_learning_rate(schedule, learning_rate):
    # Past the budget, the linear schedule holds its final value (its course
    # is tested in schedule_test.py).
    config = _config(
        network=networks.recurrent_gaussian, chunk_length=3, batch_size=2, objective='clip',
        learning_rate=1e-4, learning_rate_schedule=schedule, final_learning_rate=2e-5,
        clip_ratio=0.2, steps=100)
    result = _train_steps(config, durations=(4, 5), steps=8, seed=0, global_step=120)
    assert result['summary']['training/learning_rate'] == pytest.approx(learning_rate)
    assert result['summary']['training/clip_ratio'] == pytest.approx(0.2)


def _update_size(result):
    return np.sqrt(sum(
        np.sum(np.square(after - before))
        for before, after in zip(result['before'], result['after'])))


def test_gradient_clipping_bounds_the_update():
    # Plain gradient descent with one step per update: the weights move by the
    # learning rate times the clipped gradient.
    def update_size(max_gradient_norm):
        config = _config(
            optimizer='gradient_descent', learning_rate=1.0, update_epochs=1,
            max_gradient_norm=max_gradient_norm)
        return _update_size(_train_steps(config, durations=(1, 1), steps=1, seed=0))

    assert update_size(None) > 0.01
    assert 0 < update_size(1e-3) <= 1e-3 * (1 + 1e-5)


_RECURRENT_ROLLOUTS = dict(
    network=networks.recurrent_gaussian, minibatch_size=None, chunk_length=2, batch_size=2)


@pytest.mark.parametrize('gradient_graph, network', [
    ('inline', {}), ('xla', {}), ('xla_update', {}), ('xla_update', _RECURRENT_ROLLOUTS)],
    ids=['inline', 'xla', 'xla_update', 'xla_update-recurrent'])
def test_every_gradient_graph_trains_alike(gradient_graph, network):
    # Same seed, same experience: inline, or each step or the whole update
    # compiled by XLA, the loss and gradients move the weights as the function
    # call's do, up to float rounding.
    config = dict(
        dict(rollout_length=4, gae_lambda=0.95, minibatch_size=2, update_epochs=2), **network)
    plain, compiled = [
        _train_steps(_config(gradient_graph=graph, **config), durations=(3, 3), steps=4, seed=2)
        for graph in ('function', gradient_graph)]
    # 8 steps in chunks of 2 or single steps, 2 at a time, twice.
    assert plain['summary']['training/update_steps'] == (4 if network else 8)
    assert any(not np.array_equal(a, b) for a, b in zip(plain['before'], plain['after']))
    assert plain['summary']['training/value_loss'] == pytest.approx(
        compiled['summary']['training/value_loss'], rel=1e-4)
    for weight_plain, weight_compiled in zip(plain['after'], compiled['after']):
        np.testing.assert_allclose(weight_plain, weight_compiled, rtol=1e-4, atol=1e-5)


@pytest.mark.integration
def test_the_scripts_xla_emitters_train_alike_too():
    # The command line scripts compile with XLA's classic emitters, which XLA
    # reads once per process: the test above, in a process that uses them.
    environment = {key: value for key, value in os.environ.items() if key != 'XLA_FLAGS'}
    if not process_memory.prefer_classic_xla_emitters(environment):
        pytest.skip('this TensorFlow may not know the flag that chooses the emitters')
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-n', '0', '-p', 'no:cacheprovider',
         f'{__file__}::test_every_gradient_graph_trains_alike[xla_update]'],
        capture_output=True, text=True, env=environment)
    assert result.returncode == 0, result.stdout[-3000:]
    assert '1 passed' in result.stdout


def test_update_on_short_episodes_touches_only_their_steps():
    # Episodes of 3 steps in a memory padded to 5 or to 50 steps: the update runs
    # over the 6 real steps only, two at a time, and moves the weights alike.
    results = [
        _train_steps(
            _config(max_length=max_length, minibatch_size=2, update_epochs=1),
            durations=(3, 3), steps=3, seed=1)
        for max_length in (5, 50)]
    for result in results:
        assert result['summary']['training/update_steps'] == 3
    short, long_ = results
    assert short['summary']['training/value_loss'] == pytest.approx(
        long_['summary']['training/value_loss'], rel=1e-5)
    for weight_short, weight_long in zip(short['after'], long_['after']):
        np.testing.assert_allclose(weight_short, weight_long, rtol=1e-5, atol=1e-6)


def test_rollouts_train_every_rollout_length_steps_across_episodes():
    config = _config(
        rollout_length=4, objective='clip', gae_lambda=0.95, minibatch_size=4,
        update_epochs=1, value_clip=0.2, reward_normalization='return')
    # Episodes of 3 steps end inside the first rollout of 4 steps.
    not_yet = _train_steps(config, durations=(3, 3), steps=3)
    assert all(np.array_equal(a, b) for a, b in zip(not_yet['before'], not_yet['after']))
    trained = _train_steps(config, durations=(3, 3), steps=4)
    assert trained['summary']['training/update_steps'] == 2  # 8 steps, 4 at a time.
    assert any(not np.array_equal(a, b) for a, b in zip(trained['before'], trained['after']))


@pytest.mark.parametrize('network', [
    networks.recurrent_gaussian, networks.recurrent_categorical])
@pytest.mark.parametrize('collection', [
    dict(rollout_length=None, update_every=2),
    dict(rollout_length=8, gae_lambda=0.95)], ids=['episodes', 'rollouts'])
def test_recurrent_replay_starts_from_the_policy_that_acted(network, collection):
    # Chunks of 3 steps cut episodes of 4 and 5 steps, and with rollouts of 8
    # steps episodes also begin inside chunks. A learning rate too small to move
    # the weights keeps every update step at the policy that acted, so replaying
    # from the wrong state or observations shows as a KL divergence.
    discrete = network is networks.recurrent_categorical
    config = _config(
        network=network, chunk_length=3, batch_size=2, optimizer='gradient_descent',
        learning_rate=1e-30, update_epochs=2, normalize_ranges=not discrete, **collection)
    result = _train_steps(config, durations=(4, 5), steps=8, seed=0, discrete=discrete)
    assert result['summary']['training/update_steps'] >= 2
    assert result['summary']['training/kl'] < 1e-7
    assert result['summary']['training/kl_change'] < 1e-7
    assert result['summary']['training/clip_fraction'] == 0.0


@pytest.mark.parametrize('gradient_graph', ['function', 'xla_update'])
@pytest.mark.parametrize('network', [
    networks.feed_forward_gaussian, networks.recurrent_gaussian])
def test_each_update_step_sees_the_weights_of_the_step_before(network, gradient_graph):
    # Read once per run of the graph, the weights would stay those from before
    # the update in all of its steps: the policy would not move away from the
    # one that acted, and KL and clipping could never act.
    config = _config(
        network=network, learning_rate=1e-2, update_epochs=3, rollout_length=8,
        gae_lambda=0.95, objective='clip', gradient_graph=gradient_graph,
        **(dict(chunk_length=4, batch_size=2, minibatch_size=None)
           if network is networks.recurrent_gaussian else dict(minibatch_size=4)))
    result = _train_steps(config, durations=(4, 5), steps=8, seed=0)
    assert result['summary']['training/update_steps'] >= 6
    assert result['summary']['training/kl'] > 1e-4


def test_the_policy_sees_observations_clipped_to_five():
    seen = 5.0
    with tf.Graph().as_default():
        config = _config()
        space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
        policy = ppo.Policy(config, space, tf.zeros(3))
        # Statistics of mean 0 and a standard deviation close to 1.
        update = policy.observ_filter.update(tf.constant([[-1.0] * 3, [1.0] * 3]) / np.sqrt(2))
        normalized = policy.observ_filter.transform(tf.constant([[100.0, -100.0, 0.5]]))
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(update)
            result = sess.run(normalized)[0]
    np.testing.assert_allclose(result, [seen, -seen, 0.5], rtol=1e-3)


@pytest.mark.parametrize('normalization, seen', [
    ('reward', 10.0), ('return', 10.0), ('none', 100.0)])
def test_training_sees_scaled_rewards_clipped_to_ten(normalization, seen):
    with tf.Graph().as_default():
        # The filter is the algorithm's; the graph of its steps and updates is not needed.
        envs = [tools.MockEnvironment((3,), (2,), 5, 5) for _ in range(2)]
        algo = ppo.PPO(
            tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True)),
            tf.compat.v1.train.get_or_create_global_step(), tf.constant(True),
            tf.constant(False), _config(reward_normalization=normalization))
        # Rewards whose spread is close to 1, so scaling leaves them almost as they are.
        update = algo._reward_filter.update(tf.constant([-1.0, 1.0]) / np.sqrt(2))
        scaled = algo._reward_filter.transform(tf.constant([100.0, -100.0, 0.5]))
        with _session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(update)
            result = sess.run(scaled)
    np.testing.assert_allclose(result, [seen, -seen, 0.5], rtol=1e-3)


def test_original_import_paths_still_work():
    from agents import algorithms
    from agents.algorithms import ppo as ppo_package
    assert algorithms.PPO is ppo_package.PPO is ppo.PPO
