"""Tests for saving and loading configurations and creating environments."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from agents import tools
from agents.parts import networks
from agents.scripts import environments
from agents.scripts import run_api
from agents.scripts.cli import command_line


def test_saved_config_loads_with_the_same_values_and_callables(tmp_path):
    config = run_api.make_config('pendulum')
    run_api.save_config(config, str(tmp_path))
    text = (tmp_path / 'config.yaml').read_text()
    assert 'network: feed_forward_gaussian\n' in text and 'optimizer: adam\n' in text
    assert '!' not in text  # Plain data: registered names, no tags.
    loaded = run_api.load_config(str(tmp_path))
    assert loaded.network is networks.feed_forward_gaussian
    assert loaded.algorithm is config.algorithm
    assert loaded.optimizer is config.optimizer
    assert loaded.env == 'Pendulum-v1' and loaded.max_length == 200
    assert loaded.policy_layers == (64, 64)
    assert loaded == config


VALID_YAML = 'env: Pendulum-v1\nmax_length: 10\nsteps: 100\n'

# Entries of a config.yaml that would run code if loading resolved callables by
# import path: file, process and py_function calls through agents and tensorflow.
ATTACKS = [
    ('optimizer', '!callable tensorflow.io.gfile:rmtree', 'tensorflow.io.gfile:rmtree'),
    ('optimizer', 'tensorflow.io:write_file', 'tensorflow.io:write_file'),
    ('optimizer', '!callable tensorflow.compat.v1.gfile:DeleteRecursively', 'DeleteRecursively'),
    ('network', '!callable tensorflow:py_function', 'tensorflow:py_function'),
    ('network', '!callable agents.scripts.utility:save_config', 'utility:save_config'),
    ('algorithm', '!callable agents.tools.wrappers:ExternalProcess', 'wrappers:ExternalProcess'),
    ('algorithm', '!callable subprocess:Popen', 'subprocess:Popen'),
    ('env', '!callable os:system', 'os:system'),
    ('env', 'subprocess:Popen-v0', 'subprocess:Popen-v0'),
    ('network', '!!python/object/apply:os.system ["touch {victim}/pwned"]',
     '!!python/object/apply:os.system'),
    ('optimizer', '!!python/name:tensorflow.io.gfile.rmtree',
     '!!python/name:tensorflow.io.gfile.rmtree'),
    ('weight_summaries', '{{all: !!python/object/apply:os.system ["touch {victim}/pwned"]}}',
     'os.system'),
]


@pytest.mark.parametrize('key, entry, shown', ATTACKS)
def test_config_naming_code_is_refused_before_a_graph_is_built(tmp_path, key, entry, shown):
    victim = tmp_path / 'victim'
    (victim / 'data').mkdir(parents=True)
    values = dict(env='Pendulum-v1', max_length=10, steps=100, learning_rate=0.1)
    values[key] = entry.format(victim=victim)
    text = ''.join(f'{name}: {value}\n' for name, value in values.items())
    (tmp_path / 'config.yaml').write_text(text)
    with tf.Graph().as_default() as graph:
        with pytest.raises(run_api.ConfigError) as error:
            run_api.load_config(str(tmp_path))
        assert graph.get_operations() == []
    message = str(error.value)
    assert message.startswith(f'Invalid {tmp_path}/config.yaml: {key}') and shown in message
    assert '\n' not in message
    assert (victim / 'data').is_dir() and not (victim / 'pwned').exists()


def test_the_attack_of_the_issue_is_refused(tmp_path):
    victim = tmp_path / 'victim'
    victim.mkdir()
    (tmp_path / 'config.yaml').write_text(
        f'{VALID_YAML}optimizer: !callable tensorflow.io.gfile:rmtree\nlearning_rate: {victim}\n')
    with pytest.raises(run_api.ConfigError) as error:
        run_api.load_config(str(tmp_path))
    assert "optimizer: 'tensorflow.io.gfile:rmtree' is not a registered optimizer" in str(
        error.value)
    assert victim.is_dir()


def test_older_config_files_with_import_paths_of_registered_objects_load(tmp_path):
    (tmp_path / 'config.yaml').write_text(
        VALID_YAML + 'algorithm: !callable agents.algorithms.ppo.ppo:PPO\n'
        'network: !callable agents.scripts.networks:feed_forward_categorical\n'
        'optimizer: !callable tensorflow.compat.v1.train:AdamOptimizer\n')
    config = run_api.load_config(str(tmp_path))
    assert config.network is networks.feed_forward_categorical
    assert config.optimizer is tf.compat.v1.train.AdamOptimizer
    assert config.algorithm.__name__ == 'PPO'


def test_missing_or_broken_config_gives_clear_errors(tmp_path):
    with pytest.raises(run_api.ConfigError, match='No config.yaml'):
        run_api.load_config(str(tmp_path))
    (tmp_path / 'config.yaml').write_text('env: [unclosed\n')
    with pytest.raises(run_api.ConfigError, match=r'Cannot parse .*config.yaml: .* at line 2'):
        run_api.load_config(str(tmp_path))
    (tmp_path / 'config.yaml').write_bytes(VALID_YAML.encode() + b'seed: \xff\xfe\n')
    with pytest.raises(run_api.ConfigError, match='is not UTF-8 text: byte 0xff on line 4'):
        run_api.load_config(str(tmp_path))
    (tmp_path / 'config.yaml').write_text('- a list\n')
    with pytest.raises(run_api.ConfigError, match='does not hold a mapping'):
        run_api.load_config(str(tmp_path))
    (tmp_path / 'config.yaml').write_text(VALID_YAML + 'stesp: 3\n')
    with pytest.raises(run_api.ConfigError, match="unknown key 'stesp' .did you mean 'steps'"):
        run_api.load_config(str(tmp_path))


def test_config_function_from_a_user_module():
    config = run_api.make_config('agents.scripts.configs:cartpole')
    assert config.env == 'CartPole-v1'


def test_make_environment_wraps_with_normalized_ranges_and_seeds():
    env = environments.make_environment('Pendulum-v1', 50, True, seed=3)
    other = environments.make_environment('Pendulum-v1', 50, True, seed=3)
    np.testing.assert_allclose(env.reset()[0], other.reset()[0])
    assert env.observation_space.dtype == np.float32
    for _ in range(50):
        # Actions are clipped to the normalized range [-1, 1], so 5 acts like 1.
        observ, reward, terminated, truncated, _ = env.step(np.array([5.0], np.float32))
        expected = other.step(np.array([1.0], np.float32))
        np.testing.assert_allclose(observ, expected[0])
        assert observ.dtype == np.float32 and isinstance(reward, (float, np.floating))
    assert truncated and not terminated
    with pytest.raises(ValueError, match='NoSuchEnv'):
        environments.make_environment('NoSuchEnv-v0')


def test_every_environment_backend_has_a_flag_value():
    assert set(command_line.ENV_BACKENDS) == set(tools.envs.BACKENDS)


def test_unknown_backend_is_refused():
    with pytest.raises(run_api.ConfigError, match='backend'):
        run_api.define_batch_env([], 'threads')


def test_session_config_removes_control_dependency_no_ops_and_keeps_the_order():

    def run(config):
        with tf.Graph().as_default():
            counter = tf.compat.v1.get_variable('counter', initializer=0.0, use_resource=True)
            value = tf.constant(0.0)
            for _ in range(10):
                with tf.control_dependencies([value]):
                    increment = tf.group(counter.assign_add(1.0))
                with tf.control_dependencies([increment]):
                    value = tf.identity(counter.read_value() * 2.0)
            with tf.compat.v1.Session(config=config) as sess:
                sess.run(counter.initializer)
                metadata = tf.compat.v1.RunMetadata()
                result = sess.run(value, options=tf.compat.v1.RunOptions(
                    output_partition_graphs=True), run_metadata=metadata)
        nodes = [node.op for graph in metadata.partition_graphs for node in graph.node]
        return result, nodes.count('NoOp') + nodes.count('Identity')

    ours, unoptimized = run_api.session_config(), tf.compat.v1.ConfigProto()
    rewrites = ours.graph_options.rewrite_options
    assert list(rewrites.optimizers) == ['dependency']
    assert rewrites.meta_optimizer_iterations == rewrites.ONE
    unoptimized.graph_options.rewrite_options.disable_meta_optimizer = True
    (result, no_ops), (expected, unoptimized_no_ops) = run(ours), run(unoptimized)
    assert result == expected == 20.0
    assert no_ops < unoptimized_no_ops


def _train_in_loop(logdir, steps_per_run, rollout_length):
    """Train a tiny PPO for three updates in a loop; its results, summaries and variables."""
    config = run_api.make_config('pendulum')
    with config.unlocked():
        config.update(
            num_agents=4, max_length=50, steps=600, update_every=4, update_epochs=2,
            minibatch_size=50, policy_layers=(16,), value_layers=(16,),
            rollout_length=rollout_length, learning_rate_schedule='linear')
    with tf.Graph().as_default():
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, config.num_agents), 'inprocess')
        loop = tools.Loop(logdir)
        graph = run_api.define_simulation_graph(batch_env, config.algorithm, config, loop)
        loop.add_phase(
            'train', graph.done, graph.score, graph.summary, steps=200, log_every=60,
            feed={graph.is_training: True}, steps_per_run=steps_per_run)
        with tf.compat.v1.Session(config=run_api.session_config()) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            results = [(each.step, each.score, each.episodes)
                       for each in loop.run(sess, None, config.steps)]
            variables = sess.run(tf.compat.v1.global_variables())
        loop.close()
        batch_env.close()
    (events,) = glob.glob(os.path.join(logdir, 'train', 'events.out.tfevents.*'))
    summaries = [
        (event.step, value.tag, value.simple_value)
        for event in tf.compat.v1.train.summary_iterator(events)
        for value in event.summary.value if value.HasField('simple_value')]
    return results, summaries, variables


@pytest.mark.integration
@pytest.mark.parametrize('rollout_length', [None, 25])
def test_runs_of_several_steps_train_exactly_like_single_steps(tmp_path, rollout_length):
    results, summaries, variables = _train_in_loop(str(tmp_path / 'one'), 1, rollout_length)
    results_k, summaries_k, variables_k = _train_in_loop(
        str(tmp_path / 'seven'), 7, rollout_length)
    assert [step for step, _, _ in results] == [200, 400, 600]
    assert results_k == results
    assert summaries and summaries_k == summaries
    for variable, variable_k in zip(variables, variables_k, strict=True):
        np.testing.assert_array_equal(variable_k, variable)
