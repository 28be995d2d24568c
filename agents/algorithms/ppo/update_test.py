"""Tests for PPO's update: its losses, penalty, schedule, clipping and gradient graphs."""

import os
import subprocess
import sys

import numpy as np
import pytest

from agents.algorithms.ppo import testing
from agents.parts import networks
from agents.scripts.registry import REGISTRY
from agents.tools import process_memory


def test_recurrent_policy_trains_on_chunks():
    config = testing.config(
        REGISTRY, network=networks.recurrent_gaussian, chunk_length=2, batch_size=2)
    before, after = testing.weights_before_and_after_training(config, durations=(3, 5))
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))


def test_clipped_actions_train_to_finite_weights():
    # A wide policy sends most actions beyond the bounds, onto their probability mass.
    config = testing.config(REGISTRY, action_bounds=(-1.0, 1.0), init_std=3.0)
    before, after = testing.weights_before_and_after_training(config)
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))
    assert all(np.isfinite(weight).all() for weight in after)


@pytest.mark.parametrize('kl_target, bound', [(1e6, 0.5), (1e-9, 2.0)])
def test_kl_penalty_stays_within_its_bounds(kl_target, bound):
    # Episodes of two steps fill the memory every second step: 12 updates. A
    # target far above or below every change moves the penalty by 1.5 each time.
    config = testing.config(
        REGISTRY, kl_target=kl_target, kl_penalty_bounds=(0.5, 2.0), learning_rate=0.01,
        update_epochs=1)
    result = testing.train_steps(config, durations=(2, 2), steps=24)
    assert result['penalty'] == pytest.approx(bound)


@pytest.mark.parametrize('schedule, learning_rate', [('constant', 1e-4), ('linear', 2e-5)])
def test_updates_train_with_the_scheduled_learning_rate(schedule, learning_rate):
    # Past the budget, the linear schedule holds its final value (its course
    # is tested in schedule_test.py).
    config = testing.config(
        REGISTRY, network=networks.recurrent_gaussian, chunk_length=3, batch_size=2,
        objective='clip', learning_rate=1e-4, learning_rate_schedule=schedule,
        final_learning_rate=2e-5, clip_ratio=0.2, steps=100)
    result = testing.train_steps(config, durations=(4, 5), steps=8, seed=0, global_step=120)
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
        config = testing.config(
            REGISTRY, optimizer='gradient_descent', learning_rate=1.0, update_epochs=1,
            max_gradient_norm=max_gradient_norm)
        return _update_size(testing.train_steps(config, durations=(1, 1), steps=1, seed=0))

    assert update_size(None) > 0.01
    assert 0 < update_size(1e-3) <= 1e-3 * (1 + 1e-5)


_RECURRENT_ROLLOUTS = dict(
    network=networks.recurrent_gaussian, minibatch_size=None, chunk_length=2, batch_size=2)


# Compiling with XLA takes seconds: those cases are left to the integration tier.
_COMPILED = pytest.mark.integration


@pytest.mark.parametrize('gradient_graph, network', [
    pytest.param('inline', {}, id='inline'),
    pytest.param('xla', {}, id='xla', marks=_COMPILED),
    pytest.param('xla_update', {}, id='xla_update', marks=_COMPILED),
    pytest.param('xla_update', _RECURRENT_ROLLOUTS, id='xla_update-recurrent', marks=_COMPILED)])
def test_every_gradient_graph_trains_alike(gradient_graph, network):
    # Same seed, same experience: inline, or each step or the whole update
    # compiled by XLA, the loss and gradients move the weights as the function
    # call's do, up to float rounding.
    config = dict(
        dict(rollout_length=4, gae_lambda=0.95, minibatch_size=2, update_epochs=2), **network)
    plain, compiled = [
        testing.train_steps(
            testing.config(REGISTRY, gradient_graph=graph, **config), durations=(3, 3), steps=4,
            seed=2)
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
        testing.train_steps(
            testing.config(REGISTRY, max_length=max_length, minibatch_size=2, update_epochs=1),
            durations=(3, 3), steps=3, seed=1)
        for max_length in (5, 50)]
    for result in results:
        assert result['summary']['training/update_steps'] == 3
    short, long_ = results
    assert short['summary']['training/value_loss'] == pytest.approx(
        long_['summary']['training/value_loss'], rel=1e-5)
    for weight_short, weight_long in zip(short['after'], long_['after']):
        np.testing.assert_allclose(weight_short, weight_long, rtol=1e-5, atol=1e-6)


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
    config = testing.config(
        REGISTRY, network=network, chunk_length=3, batch_size=2, optimizer='gradient_descent',
        learning_rate=1e-30, update_epochs=2, **collection)
    result = testing.train_steps(config, durations=(4, 5), steps=8, seed=0, discrete=discrete)
    assert result['summary']['training/update_steps'] >= 2
    assert result['summary']['training/kl'] < 1e-7
    assert result['summary']['training/kl_change'] < 1e-7
    assert result['summary']['training/clip_fraction'] == 0.0


@pytest.mark.parametrize('gradient_graph', [
    'function', pytest.param('xla_update', marks=_COMPILED)])
@pytest.mark.parametrize('network', [
    networks.feed_forward_gaussian, networks.recurrent_gaussian])
def test_each_update_step_sees_the_weights_of_the_step_before(network, gradient_graph):
    # Read once per run of the graph, the weights would stay those from before
    # the update in all of its steps: the policy would not move away from the
    # one that acted, and KL and clipping could never act.
    config = testing.config(
        REGISTRY, network=network, learning_rate=1e-2, update_epochs=3, rollout_length=8,
        gae_lambda=0.95, objective='clip', gradient_graph=gradient_graph,
        **(dict(chunk_length=4, batch_size=2, minibatch_size=None)
           if network is networks.recurrent_gaussian else dict(minibatch_size=4)))
    result = testing.train_steps(config, durations=(4, 5), steps=8, seed=0)
    assert result['summary']['training/update_steps'] >= 6
    assert result['summary']['training/kl'] > 1e-4
