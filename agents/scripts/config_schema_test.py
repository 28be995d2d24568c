"""Tests of the training configuration's schema: every config validates, docs/configs.md matches."""

import os

from gymnasium.envs.classic_control import pendulum
import pytest

from agents.parts import networks
from agents.scripts import config_schema
from agents.scripts import configs
from agents.scripts import environments
from agents.scripts import registry
from agents.scripts import run_api
from agents.tools.schema import ConfigError

registry.register('env', pendulum.PendulumEnv, name='schema_test_pendulum')

TASKS = (
    'pendulum', 'cartpole', 'reacher', 'cheetah', 'walker', 'hopper', 'ant', 'humanoid',
    'pendulum_novel', 'cartpole_novel')


@pytest.mark.parametrize('name', TASKS)
def test_every_shipped_config_is_valid(name):
    config = config_schema.make(getattr(configs, name)())
    assert config.env.endswith(('-v1', '-v5')) and config.steps > 0 and config.max_length > 0
    assert callable(config.algorithm) and callable(config.network) and callable(config.optimizer)


def test_reference_page_matches_the_schema():
    page = os.path.join(os.path.dirname(__file__), '..', '..', 'docs', 'configs.md')
    with open(page) as file_:
        text = file_.read()
    assert text == config_schema.reference_page(), (
        'docs/configs.md is out of date: run '
        '`python -m agents.scripts.config_schema > docs/configs.md`.')


def test_the_network_adds_its_keys_with_their_defaults():
    config = config_schema.make(dict(
        env='CartPole-v1', max_length=10, steps=10, network='feed_forward_categorical'))
    assert config.network is networks.feed_forward_categorical
    assert config.policy_layers == networks.NetworkConfig().policy_layers


@pytest.mark.parametrize('change, message', [
    (dict(stesp=10), "unknown key 'stesp' (did you mean 'steps'?)"),
    (dict(learning_rat=0.1), "unknown key 'learning_rat' (did you mean 'learning_rate'?)"),
    (dict(steps=-1000), 'steps must be >= 1, got -1000'),
    (dict(num_agents=0), 'num_agents must be >= 1, got 0'),
    (dict(discount=1.5), 'discount must be <= 1, got 1.5'),
    (dict(policy_layers=(64, -1)), 'policy_layers must be >= 1, got (64, -1)'),
    (dict(env='Pendulum-v9'), "cannot make environment 'Pendulum-v9'"),
    (dict(env='NoSuchTask-v0'), "cannot make environment 'NoSuchTask-v0'"),
    (dict(env='no_such_module:Task-v0'),
     "env 'no_such_module:Task-v0' names the module 'no_such_module', which a saved config "
     "does not import; import it with --register=no_such_module"),
    (dict(optimizer='tensorflow.io.gfile:rmtree'),
     "optimizer: 'tensorflow.io.gfile:rmtree' is not a registered optimizer"),
    (dict(network='feed_forwards'), "network: 'feed_forwards' is not a registered network"),
    (dict(algorithm='ppo2'), "algorithm: 'ppo2' is not a registered algorithm"),
    (dict(action_bounds=(1, -1)), 'action_bounds must be (low, high) with low < high'),
    (dict(network='recurrent_gaussian'),
     'minibatch_size applies to feed-forward networks; a recurrent network trains on '
     'batch_size sequences of chunk_length steps'),
    (dict(network='recurrent_gaussian', minibatch_size=None, chunk_length=256),
     'chunk_length 256 exceeds rollout_length 128: chunks are cut from rollouts'),
    (dict(chunk_length=32),
     'chunk_length and batch_size apply to recurrent networks; a feed-forward network '
     'trains on minibatch_size steps'),
    (dict(batch_size=8), 'chunk_length and batch_size apply to recurrent networks'),
    (dict(gradient_graph='xla_update', rollout_length=None),
     "gradient_graph='xla_update' needs rollout_length"),
    (dict(env_kwargs={'gravity': 2.0}),
     "env_kwargs: Pendulum-v1 does not take {'gravity': 2.0}: TypeError: "
     "PendulumEnv.__init__() got an unexpected keyword argument 'gravity'"),
    (dict(env_kwargs={'g': {'earth': 9.8}}), 'env_kwargs must be dict of str to bool or int'),
    (dict(env='schema_test_pendulum', env_kwargs={'g': 2.0}),
     'env_kwargs apply to a Gymnasium id; the env is a constructor'),
])
def test_bad_values_are_refused_in_one_line(change, message):
    values = configs.pendulum()
    values.update(change)
    with pytest.raises(ConfigError) as error:
        config_schema.make(values)
    assert message in str(error.value) and '\n' not in str(error.value)


def test_keys_of_a_task_are_required():
    with pytest.raises(ConfigError, match="missing key 'env'.*missing key 'max_length'"):
        config_schema.make(configs.default())


def test_env_kwargs_reach_the_task_and_survive_the_saved_config(tmp_path):
    values = configs.pendulum()
    values.update(env_kwargs={'g': 2.5}, seed=1)
    config = config_schema.make(values)
    run_api.save_config(config, str(tmp_path))
    loaded = run_api.load_config(str(tmp_path))
    assert loaded.env_kwargs == {'g': 2.5}
    env = environments.environment_constructors(loaded, 1)[0]()
    assert env.unwrapped.g == 2.5
    env.close()
