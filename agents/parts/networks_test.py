"""Tests for the policy and value networks."""

import types

import gymnasium
import numpy as np
import pytest
import tensorflow as tf

from agents.parts import networks
from agents.parts.distributions import Bernoulli
from agents.parts.distributions import Categorical
from agents.parts.distributions import DiagonalGaussian
from agents.parts.distributions import FactoredCategorical

_CONFIG = {
    'policy_layers': (8, 6),
    'value_layers': (7,),
    'init_std': 0.4,
    'init_output_factor': 0.1,
}
_BOX = gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)
_DISCRETE = gymnasium.spaces.Discrete(4)
_GAUSSIAN_NETWORKS = [networks.feed_forward_gaussian, networks.recurrent_gaussian]


def _observations(batch_size=2, time=5, seed=0):
    """Observations `[batch, time, 2, 2]`, with extra dimensions to flatten."""
    return np.random.RandomState(seed).normal(size=(batch_size, time, 2, 2)).astype(np.float32)


def _template(network, config=None, action_space=_BOX):
    """Wraps a network so that every call shares the variables of the first."""
    return tf.compat.v1.make_template(
        'network', lambda *args: network(config or _CONFIG, action_space, *args))


def _session():
    session = tf.compat.v1.Session()
    session.run(tf.compat.v1.global_variables_initializer())
    return session


@pytest.mark.parametrize('network', [
    networks.feed_forward_gaussian, networks.feed_forward_categorical])
def test_feed_forward_without_length_equals_full_length(network):
    action_space = _BOX if network is networks.feed_forward_gaussian else _DISCRETE
    with tf.Graph().as_default():
        template = _template(network, action_space=action_space)
        unmasked = template(_observations(), None)
        masked = template(_observations(), tf.constant([5, 5]))
        with _session() as session:
            results = session.run([
                (output.value, output.policy.parameters) for output in (unmasked, masked)])
    tf.nest.map_structure(np.testing.assert_array_equal, results[0], results[1])


@pytest.mark.parametrize('network', _GAUSSIAN_NETWORKS)
def test_gaussian_output_shapes_and_init_std(network):
    with tf.Graph().as_default():
        output = network(_CONFIG, _BOX, _observations(), tf.constant([5, 3]))
        assert isinstance(output, networks.NetworkOutput)
        assert isinstance(output.policy, DiagonalGaussian)
        with _session() as session:
            mean, std, value, sample = session.run([
                output.policy.mean, output.policy.std, output.value, output.policy.sample()])
    assert mean.shape == std.shape == sample.shape == (2, 5, 3)
    assert value.shape == (2, 5)
    np.testing.assert_allclose(std[0], 0.4, rtol=1e-6)
    np.testing.assert_allclose(std[1, :3], 0.4, rtol=1e-6)
    # Steps after a sequence's length are padding and come out as zeros.
    np.testing.assert_array_equal(mean[1, 3:], 0.0)


def test_init_std_per_dimension_and_small_initial_mean():
    config = dict(_CONFIG, init_std=[0.1, 1.0, 2.0], init_output_factor=1e-4)
    with tf.Graph().as_default():
        output = networks.feed_forward_gaussian(config, _BOX, _observations(), None)
        with _session() as session:
            mean, std = session.run([output.policy.mean, output.policy.std])
    np.testing.assert_allclose(std, np.broadcast_to([0.1, 1.0, 2.0], std.shape), rtol=1e-6)
    assert np.abs(mean).max() < 0.05


@pytest.mark.parametrize('bounded_mean', [True, False])
def test_bounded_mean_stays_in_action_range_only_when_asked(bounded_mean):
    config = dict(_CONFIG, init_output_factor=100.0, bounded_mean=bounded_mean)
    with tf.Graph().as_default():
        output = networks.feed_forward_gaussian(config, _BOX, 10 * _observations(), None)
        with _session() as session:
            mean = session.run(output.policy.mean)
    assert (np.abs(mean).max() <= 1.0) == bounded_mean


def test_categorical_output_shapes():
    with tf.Graph().as_default():
        output = networks.feed_forward_categorical(
            _CONFIG, _DISCRETE, _observations(), tf.constant([5, 2]))
        assert isinstance(output.policy, Categorical)
        with _session() as session:
            logits, value, sample = session.run(
                [output.policy.logits, output.value, output.policy.sample()])
    assert logits.shape == (2, 5, 4)
    assert value.shape == (2, 5)
    assert sample.dtype == np.int32 and sample.shape == (2, 5)
    assert ((sample >= 0) & (sample < 4)).all()


def test_config_with_attributes_is_accepted():
    config = types.SimpleNamespace(**_CONFIG)
    with tf.Graph().as_default():
        output = networks.feed_forward_categorical(config, _DISCRETE, _observations(), None)
        assert output.policy.logits.shape.as_list() == [2, 5, 4]


def test_feed_forward_state_is_a_dummy():
    with tf.Graph().as_default():
        output = networks.feed_forward_gaussian(_CONFIG, _BOX, _observations(), None)
        assert output.state.shape.as_list() == [2, 1]


def test_recurrent_state_is_carried_between_calls():
    observations = _observations(time=4)
    with tf.Graph().as_default():
        network = _template(networks.recurrent_gaussian)
        whole = network(observations, tf.constant([4, 4]))
        state = None
        step_means = []
        for step in range(4):
            output = network(observations[:, step:step + 1], tf.constant([1, 1]), state)
            step_means.append(output.policy.mean)
            state = output.state
        fresh = network(observations[:, 3:4], tf.constant([1, 1]))
        assert whole.state.shape.as_list() == [2, 6]
        with _session() as session:
            whole_mean, whole_state, step_means, step_state, fresh_mean = session.run(
                [whole.policy.mean, whole.state, step_means, state, fresh.policy.mean])
    # Stepping one observation at a time, feeding back the state, equals one
    # pass over the sequence.
    np.testing.assert_allclose(np.concatenate(step_means, 1), whole_mean, atol=1e-5)
    np.testing.assert_allclose(step_state, whole_state, atol=1e-5)
    # The same observation gives another action after a history than from zeros.
    assert np.abs(fresh_mean - step_means[3]).max() > 1e-3


def test_recurrent_final_state_is_taken_at_the_length():
    observations = _observations(time=4)
    with tf.Graph().as_default():
        network = _template(networks.recurrent_gaussian)
        padded = network(observations, tf.constant([2, 4]))
        short = network(observations[:, :2], tf.constant([2, 2]))
        with _session() as session:
            padded_state, short_state = session.run([padded.state, short.state])
    np.testing.assert_allclose(padded_state[0], short_state[0], atol=1e-6)
    assert not np.allclose(padded_state[1], short_state[1])


@pytest.mark.parametrize('network, action_space', [
    (networks.recurrent_gaussian, _BOX), (networks.recurrent_categorical, _DISCRETE)])
def test_reset_starts_an_episode_inside_a_sequence_from_zeros(network, action_space):
    observations = _observations(time=6)
    reset = np.zeros((2, 6), bool)
    reset[0, 3] = True
    with tf.Graph().as_default():
        template = _template(network, action_space=action_space)
        _, initial_state = template(observations[:, :2], None)[1:]
        whole = template(observations, None, initial_state, reset)
        episode = template(observations[:, 3:], None)
        carried = template(observations, None, initial_state)
        with _session() as session:
            whole, episode, carried = session.run(
                [whole.policy.parameters, episode.policy.parameters,
                 carried.policy.parameters])
    for whole_part, episode_part, carried_part in zip(
            tf.nest.flatten(whole), tf.nest.flatten(episode), tf.nest.flatten(carried)):
        # After the reset, the row equals a fresh episode; the other row and the
        # steps before it equal the run without resets.
        np.testing.assert_allclose(whole_part[0, 3:], episode_part[0], atol=1e-6)
        np.testing.assert_allclose(whole_part[1], carried_part[1], atol=1e-6)
        np.testing.assert_allclose(whole_part[0, :3], carried_part[0, :3], atol=1e-6)
    # The mean or the logits depend on the state.
    assert max(np.abs(whole_part[0, 3:] - carried_part[0, 3:]).max() for whole_part, carried_part
               in zip(tf.nest.flatten(whole), tf.nest.flatten(carried))) > 1e-4


@pytest.mark.parametrize('cell_type, action_space', [
    (networks.RecurrentGaussian, 3), (networks.RecurrentCategorical, 4)])
def test_unrolled_network_equals_its_cell_under_dynamic_rnn(cell_type, action_space):
    # The network runs the layers around the GRU once over all steps; the cell
    # runs the whole network step by step. Both give the same outputs, zero
    # after each sequence's length, and the same final state and gradients.
    observations = _observations(time=5).reshape(2, 5, 4)
    arguments = dict(
        policy_layers=(8, 6), value_layers=(7,), init_output_factor=0.5,
        **({'action_size': action_space, 'init_std': 0.4}
           if cell_type is networks.RecurrentGaussian else {'num_actions': action_space}))
    cell = cell_type(**arguments)
    with tf.Graph().as_default():
        length = tf.constant([5, 3])
        with tf.compat.v1.variable_scope('rnn'):
            cell(tf.zeros([1, 4]), cell.zero_state(1, tf.float32))  # Creates the variables.
        with tf.compat.v1.variable_scope('', reuse=True):
            stepped = tf.compat.v1.nn.dynamic_rnn(cell, observations, length, dtype=tf.float32)
            with tf.compat.v1.variable_scope('rnn'):
                unrolled = cell.unroll(observations, length, None, None)
        gradients = [
            tf.gradients(tf.add_n([tf.reduce_sum(part) for part in tf.nest.flatten(run)]),
                         tf.compat.v1.trainable_variables())
            for run in (stepped, unrolled)]
        names = sorted(variable.name for variable in tf.compat.v1.trainable_variables())
        with _session() as session:
            stepped, unrolled, gradients = session.run((stepped, unrolled, gradients))
    assert 'rnn/policy/gru/gates/weight:0' in names
    for stepped_part, unrolled_part in zip(
            tf.nest.flatten((stepped, gradients[0])), tf.nest.flatten((unrolled, gradients[1]))):
        np.testing.assert_allclose(stepped_part, unrolled_part, rtol=1e-5, atol=1e-6)


def test_recurrent_categorical_outputs_logits_and_a_gru_state():
    with tf.Graph().as_default():
        output = networks.recurrent_categorical(
            _CONFIG, _DISCRETE, _observations(), tf.constant([5, 2]))
        assert isinstance(output.policy, Categorical)
        assert output.policy.logits.shape.as_list() == [2, 5, 4]
        assert output.state.shape.as_list() == [2, 6]
        assert networks.recurrent_categorical.is_recurrent


def test_zero_state():
    cell = networks.RecurrentGaussian((5, 4), (3,), 2, 1.0, 0.1)
    with tf.Graph().as_default():
        state = cell.zero_state(3, tf.float32)
        assert state.shape.as_list() == [3, 4]
        assert cell.state_size == 4
        assert networks.FeedForwardCategorical((5,), (3,), 2, 0.1).state_size == 1
        with tf.compat.v1.Session() as session:
            np.testing.assert_array_equal(session.run(state), np.zeros((3, 4)))


@pytest.mark.parametrize('network', _GAUSSIAN_NETWORKS)
def test_variables_are_shared_under_a_reusing_scope(network):
    def build():
        with tf.compat.v1.variable_scope('agent', reuse=tf.compat.v1.AUTO_REUSE):
            return network(_CONFIG, _BOX, _observations(), None)

    with tf.Graph().as_default():
        first = build()
        count = len(tf.compat.v1.trainable_variables())
        second = build()
        variables = tf.compat.v1.trainable_variables()
        assert len(variables) == count
        assert all(variable.name.startswith('agent/') for variable in variables)
        names = {variable.name for variable in variables}
        assert 'agent/rnn/policy/log_std:0' in names
        with _session() as session:
            first_mean, second_mean = session.run([first.policy.mean, second.policy.mean])
    np.testing.assert_array_equal(first_mean, second_mean)


@pytest.mark.parametrize('network', _GAUSSIAN_NETWORKS + [networks.feed_forward_categorical])
def test_network_trains(network):
    action_space = _DISCRETE if network is networks.feed_forward_categorical else _BOX
    random = np.random.RandomState(1)
    observations = _observations(batch_size=4, time=3)
    if action_space is _BOX:
        actions = random.uniform(-1, 1, size=(4, 3, 3)).astype(np.float32)
    else:
        actions = random.randint(0, 4, size=(4, 3)).astype(np.int32)
    returns = random.normal(size=(4, 3)).astype(np.float32)
    with tf.Graph().as_default():
        output = network(_CONFIG, action_space, observations, tf.constant([3, 3, 2, 1]))
        loss = (-tf.reduce_mean(output.policy.log_prob(actions))
                + tf.reduce_mean(tf.square(output.value - returns)))
        train = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)
        with _session() as session:
            initial_loss = session.run(loss)
            for _ in range(5):
                session.run(train)
            final_loss = session.run(loss)
    assert final_loss < initial_loss


def test_bad_input_raises_clear_errors():
    with tf.Graph().as_default():
        observations = _observations()
        with pytest.raises(ValueError, match='Discrete action space'):
            networks.feed_forward_categorical(_CONFIG, _BOX, observations, None)
        with pytest.raises(ValueError, match='one-dimensional gymnasium.spaces.Box'):
            networks.feed_forward_gaussian(_CONFIG, _DISCRETE, observations, None)
        with pytest.raises(ValueError, match='`init_std` in the config'):
            config = {key: _CONFIG[key] for key in ('policy_layers', 'value_layers')}
            networks.feed_forward_gaussian(config, _BOX, observations, None)
        with pytest.raises(ValueError, match='at least one policy layer'):
            networks.recurrent_gaussian(dict(_CONFIG, policy_layers=[]), _BOX, observations, None)
        with pytest.raises(ValueError, match='positive layer sizes'):
            networks.feed_forward_gaussian(
                dict(_CONFIG, value_layers=[4, 0]), _BOX, observations, None)
        with pytest.raises(ValueError, match='init_std must be'):
            networks.feed_forward_gaussian(
                dict(_CONFIG, init_std=[1.0, 2.0]), _BOX, observations, None)
        unknown = tf.compat.v1.placeholder(tf.float32, [None, None, None])
        for bad in (np.zeros(3, np.float32), unknown):
            with pytest.raises(ValueError, match=r'\[batch, time, ...\] with a known shape'):
                networks.feed_forward_gaussian(_CONFIG, _BOX, bad, None)
        with pytest.raises(ValueError, match='shape per step is known'):
            networks.FeedForwardCategorical((3,), (3,), 2, 0.1)(unknown[:, 0], None)


_MULTI_DISCRETE = gymnasium.spaces.MultiDiscrete([4, 2, 3])
_MULTI_BINARY = gymnasium.spaces.MultiBinary(3)


@pytest.mark.parametrize('network', [networks.feed_forward, networks.recurrent])
@pytest.mark.parametrize('action_space, policy_type', [
    (_BOX, DiagonalGaussian), (_DISCRETE, Categorical),
    (_MULTI_DISCRETE, FactoredCategorical), (_MULTI_BINARY, Bernoulli)])
def test_the_head_follows_the_action_space_and_samples_lie_in_it(
        network, action_space, policy_type):
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(0)
        output = network(_CONFIG, action_space, _observations(8, 3), tf.constant([3] * 8))
        assert type(output.policy) is policy_type and output.value.shape[:2] == (8, 3)
        action = output.policy.sample()
        log_prob = output.policy.log_prob(action)
        entropy = output.policy.entropy()
        with _session() as session:
            samples, log_prob, entropy = session.run([action, log_prob, entropy])
    assert log_prob.shape == entropy.shape == (8, 3)
    assert np.all(np.isfinite(log_prob)) and np.all(entropy >= 0)
    if not isinstance(action_space, gymnasium.spaces.Box):
        assert all(action_space.contains(each.astype(action_space.dtype))
                   for each in samples.reshape(-1, *action_space.shape))


def test_a_factored_head_never_picks_a_class_an_entry_lacks():
    with tf.Graph().as_default():
        output = networks.feed_forward(
            dict(_CONFIG, init_output_factor=100.0), _MULTI_DISCRETE,
            _observations(64, 4, seed=3), None)
        with _session() as session:
            samples, mode = session.run([output.policy.sample(), output.policy.mode()])
    for values in (samples, mode):
        assert values[..., 1].max() <= 1 and values[..., 2].max() <= 2


@pytest.mark.parametrize('network, action_space, fits', [
    (networks.feed_forward_gaussian, _DISCRETE, 'feed_forward_categorical'),
    (networks.recurrent_categorical, _BOX, 'feed_forward_gaussian or recurrent_gaussian'),
    (networks.feed_forward_categorical, _MULTI_BINARY, 'feed_forward or recurrent')])
def test_a_head_that_does_not_fit_the_action_space_names_the_network_that_does(
        network, action_space, fits):
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as caught:
            network(_CONFIG, action_space, _observations(), None)
    message = str(caught.value)
    assert '\n' not in message and fits in message, message
