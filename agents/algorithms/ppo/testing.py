"""PPO graphs on mock environments, shared by the tests of PPO and of its update.

Building a PPO graph costs seconds, running a few steps a fraction of one, so
tests next to each other share the graphs `graph` built last. Each test runs a
shared graph in a session of its own, which starts as on a graph just built.
"""

import collections

import gymnasium
import numpy as np
import tensorflow as tf

from agents import tools
from agents.algorithms.ppo import config as ppo_config
from agents.algorithms.ppo import ppo
from agents.tools import schema

# The graphs `graph` built last, by its arguments, oldest first. A PPO graph
# holds tens of megabytes; tests next to each other share the few kept.
_GRAPHS = collections.OrderedDict()
_GRAPHS_KEPT = 3


def config(registry, max_length=5, steps=10, **overrides):
    """A small PPO config: PPO's keys and its network's, checked by their schemas.

    PPO's schema is `config.PPOConfig`; the network it names adds its own. Of a
    run's keys, the config holds the two PPO reads; the environments are mocks.

    Args:
      registry: `tools.registry.Registry` that resolves the names of networks
        and optimizers, as PPO's defaults give them, such as the commands'
        `agents.scripts.registry.REGISTRY`, which the algorithm does not import.
      max_length: Steps after which an episode is cut off: the memory's length.
      steps: Environment steps of the run, where the learning rate schedule ends.
      **overrides: Keys of PPO and of its network.

    Raises:
      ConfigError: If a key is unknown or a value invalid.

    Returns:
      Locked AttrDict of the keys.
    """
    values = dict(
        update_every=2, update_epochs=2, policy_layers=(8,), value_layers=(8,),
        chunk_length=None, batch_size=None)
    values.update(overrides)
    return tools.AttrDict(
        schema.check(ppo_config.PPOConfig, values, registry, 'PPO test config'),
        max_length=max_length, steps=steps)


class _DiscreteActions(gymnasium.ActionWrapper):
    """A mock environment whose actions are three discrete steps: -1, 0 and 1."""

    def __init__(self, env):
        super().__init__(env)
        self.action_space = gymnasium.spaces.Discrete(3)

    def action(self, action):
        return np.full(self.env.action_space.shape, action - 1.0, np.float32)


def _define_graph(config, durations=(5, 5), discrete=False):
    """PPO stepping mock environments whose episodes last `durations` steps, in the default graph.

    Returns:
      Tuple of the algorithm, the `is_training` and `should_log` placeholders,
      and the `(done, score, summary)` of one `tools.simulate` step.
    """
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


def graph(config, durations=(5, 5), discrete=False, seed=None):
    """The graph of `_define_graph` for these arguments, shared by the tests next to each other.

    A session of its own starts the shared graph as one just built: it
    initializes the variables, starts the random streams over from the graph's
    seed, and resets every environment at its first step (their episodes count
    as done). Operations a test adds stay unused by the others.

    Returns:
      Tuple of the graph and of what `_define_graph` returns.
    """
    key = (repr(config), durations, discrete, seed)
    if key not in _GRAPHS:
        new = tf.Graph()
        with new.as_default():
            if seed is not None:
                tf.compat.v1.set_random_seed(seed)
            _GRAPHS[key] = new, _define_graph(config, durations, discrete)
        if len(_GRAPHS) > _GRAPHS_KEPT:
            _GRAPHS.popitem(last=False)
    _GRAPHS.move_to_end(key)
    return _GRAPHS[key]


def drop_graphs():
    """Free the graphs kept for sharing."""
    _GRAPHS.clear()


def session():
    """A session that runs the graph as built, without Grappler's rewrites.

    The rewrites cost seconds at the first run of each graph, longer than most
    of these tests take otherwise.
    """
    options = tf.compat.v1.ConfigProto()
    options.graph_options.rewrite_options.disable_meta_optimizer = True
    return tf.compat.v1.Session(config=options)


def weights(sess):
    """The values of the graph's trainable variables."""
    return [sess.run(variable) for variable in tf.compat.v1.trainable_variables()]


def weights_before_and_after_training(config, durations=(5, 5), steps=5):
    """The weights before and after `steps` training steps of a fresh session."""
    shared, (_, is_training, _, step_op) = graph(config, durations)
    with shared.as_default():
        with session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = weights(sess)
            for _ in range(steps):
                sess.run(step_op, {is_training: True})
            return before, weights(sess)


def train_steps(config, durations, steps, seed=None, discrete=False, global_step=0):
    """Run training steps in a fresh session; return the algorithm's state and the weights.

    The global step, which the learning rate schedule reads, holds `global_step`.

    Returns:
      Dict of the weights `before` and `after`, the KL `penalty`, and the
      last value of each scalar `summary` by tag.
    """
    shared, (algo, is_training, should_log, step_op) = graph(config, durations, discrete, seed)
    with shared.as_default():
        with session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.train.get_global_step().assign(global_step))
            before, summaries = weights(sess), []
            for _ in range(steps):
                summary = sess.run(step_op[2], {is_training: True, should_log: True})
                summaries.append(tf.compat.v1.Summary.FromString(summary))
            values = {
                value.tag: value.simple_value for summary in summaries
                for value in summary.value if value.HasField('simple_value')}
            return dict(
                before=before, after=weights(sess), penalty=sess.run(algo._update.penalty),
                summary=values)
