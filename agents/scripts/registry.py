"""The registry of everything a configuration may name: algorithms, networks, optimizers, envs.

Configurations name these by their registered names (`network:
feed_forward_categorical`, `optimizer: adam`); a saved `config.yaml` stores the
names, so loading it imports and runs nothing. Register your own objects in
your module and pass `--register=your_module` to the scripts (or import the
module before building the configuration):

    from agents.scripts import registry

    @registry.register('network', keys=MyNetworkConfig)
    def my_network(config, action_space, observations, length, state=None, reset=None):
        ...

A recurrent network sets `my_network.is_recurrent = True`; PPO then passes
`reset`, the steps where an episode begins inside a sequence.

    registry.register('optimizer', MyOptimizer, name='my_optimizer')
"""

import importlib
import inspect

import tensorflow as tf

from agents.algorithms.ppo import config as ppo_config
from agents.algorithms.ppo import ppo
from agents.parts import networks
from agents.tools import registry
from agents.tools.schema import ConfigError


def _is_algorithm(value):
    methods = ('begin_episode', 'perform', 'experience', 'end_episode')
    return inspect.isclass(value) and all(callable(getattr(value, name, None)) for name in methods)


def _is_network(value):
    if not (inspect.isfunction(value) and _accepts(value, 4)):
        return False
    names = list(inspect.signature(value).parameters)[:4]
    return names == ['config', 'action_space', 'observations', 'length']


def _is_optimizer(value):
    return inspect.isclass(value) and issubclass(value, tf.compat.v1.train.Optimizer)


def _is_environment(value):
    return callable(value) and _accepts(value, 0)


def _accepts(function, count):
    """Whether `function` can be called with `count` positional arguments."""
    try:
        inspect.signature(function).bind(*[None] * count)
    except (TypeError, ValueError):
        return False
    return True


ROLES = (
    registry.Role(
        'algorithm', _is_algorithm, 'a class with the methods begin_episode, perform, '
        'experience and end_episode, built as algorithm(batch_env, step, is_training, '
        'should_log, config)'),
    registry.Role(
        'network', _is_network, 'a function (config, action_space, observations, length, '
        'state=None) returning a networks.NetworkOutput'),
    registry.Role('optimizer', _is_optimizer, 'a subclass of tf.compat.v1.train.Optimizer'),
    registry.Role(
        'env', _is_environment, 'a callable without arguments returning a Gymnasium environment'),
)

REGISTRY = registry.Registry(
    ROLES, hint='add your own with agents.scripts.registry.register in a module and pass '
    '--register=MODULE')


def register(role, value=None, *, name=None, keys=None):
    """Register an object that configurations may name; a decorator without `value`.

    Args:
      role: 'algorithm', 'network', 'optimizer' or 'env'.
      value: The object; it must pass the role's check.
      name: Name in configurations; the object's `__name__` if None.
      keys: Schema dataclass (see `agents.tools.schema`) of the configuration
        keys the object reads, if it reads keys that no other schema declares.

    Raises:
      ConfigError: If the object does not fit the role or the name is taken.

    Returns:
      The object, or a decorator that registers its argument.
    """
    if value is None:
        return lambda value: REGISTRY.register(role, value, name, keys)
    return REGISTRY.register(role, value, name, keys)


def import_modules(names):
    """Import modules that register their objects, as named by `--register`.

    Raises:
      ConfigError: If a module cannot be imported.
    """
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise ConfigError(f'Cannot import --register={name}: {error}') from None


def _register_built_ins():
    register('algorithm', ppo.PPO, name='ppo', keys=ppo_config.PPOConfig)
    for network in (
            networks.feed_forward, networks.recurrent, networks.feed_forward_gaussian,
            networks.recurrent_gaussian, networks.feed_forward_categorical,
            networks.recurrent_categorical):
        # Older configuration files name the networks by their former module.
        REGISTRY.register(
            'network', network, keys=networks.NetworkConfig,
            aliases=[f'agents.scripts.networks:{network.__name__}'])
    # Optimizers that take the learning rate as their only required argument,
    # also under the import paths where older configuration files stored them.
    for name, optimizer in dict(
            adam='AdamOptimizer', gradient_descent='GradientDescentOptimizer',
            rmsprop='RMSPropOptimizer', adagrad='AdagradOptimizer',
            adadelta='AdadeltaOptimizer').items():
        REGISTRY.register(
            'optimizer', getattr(tf.compat.v1.train, optimizer), name,
            aliases=[f'tensorflow.compat.v1.train:{optimizer}'])


_register_built_ins()
