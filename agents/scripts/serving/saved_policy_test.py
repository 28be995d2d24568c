"""Exactness of exported policies: they act as the trainer does, in a process without agents."""

import collections
import functools
import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from agents.parts import networks
from agents.scripts import configs
from agents.scripts import environments
from agents.scripts import run_api
from agents.scripts import train
from agents.scripts.serving import saved_policy
from agents.tools.schema import ConfigError

_TINY = dict(
    num_agents=2, eval_episodes=2, eval_every=128, max_length=40, steps=256,
    policy_layers=(16,), value_layers=(16,), update_epochs=1, minibatch_size=32)


def _tiny(name, **changes):
    """The config function of a shipped config, made small enough for a test."""
    def config_function():
        config = getattr(configs, name)()
        config.update(_TINY, rollout_length=32, **changes)
        return config
    config_function.__name__ = name
    return config_function


# Recurrent networks train on chunks of sequences rather than minibatches of steps.
_RECURRENT = dict(chunk_length=16, batch_size=2, minibatch_size=None)
pendulum = _tiny('pendulum')
cartpole = _tiny('cartpole')
cheetah = _tiny('cheetah')
pendulum_novel = _tiny('pendulum_novel', **_RECURRENT)  # A Gaussian GRU policy, no velocity.
cartpole_novel = _tiny('cartpole_novel', **_RECURRENT)  # A categorical GRU policy.
# Integer observations and a factored categorical GRU policy (MultiDiscrete actions).
popgym = _tiny('popgym', env='popgym:popgym-MineSweeperEasy-v0', **_RECURRENT)
# Tuple observations of two Discrete parts, a feed-forward categorical policy.
popgym_feedforward = _tiny('popgym_feedforward', env='popgym:popgym-AutoencodeEasy-v0')


_CONFIGS = (
    'pendulum', 'cartpole', 'cheetah', 'pendulum_novel', 'cartpole_novel', 'popgym',
    'popgym_feedforward')

Run = collections.namedtuple('Run', 'config, logdir, outdir, steps, acted')
Run.__doc__ = """A config's run, its export, and how both acted.

Attributes:
  config: The config.
  logdir: The run directory.
  outdir: The export directory.
  steps: The trainer's observations, actions and first flags (`_trainer_steps`).
  acted: The export's actions on those observations (`_act_without_agents`).
"""


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """A `Run` of each config, by name: a few hundred steps, exported, acted on.

    Every export acts in the same process, which loads TensorFlow once for all.
    """
    trained = {}
    for name in _CONFIGS:
        directory = tmp_path_factory.mktemp(name)
        logdir, outdir = str(directory / 'run'), str(directory / 'policy')
        config = run_api.make_config(f'{__name__}:{name}')
        run_api.save_config(config, logdir)
        list(train.train(config, logdir, 'inprocess'))
        saved_policy.export(config, logdir, outdir)
        trained[name] = config, logdir, outdir, _trainer_steps(config, logdir)
    acted = _act_without_agents(
        {name: (outdir, steps[0], steps[2]) for name, (_, _, outdir, steps) in trained.items()},
        str(tmp_path_factory.mktemp('act')))
    return {name: Run(*trained[name], acted[name]) for name in _CONFIGS}


class _Recorder(gym.Wrapper):
    """Keeps each observation the environment returned and the action it got after it."""

    def __init__(self, env, steps):
        super().__init__(env)
        self._steps, self._observ = steps, None

    def reset(self, **kwargs):
        self._observ, info = self.env.reset(**kwargs)
        self._first = True
        return self._observ, info

    def step(self, action):
        self._steps.append((self._observ, np.array(action), self._first))
        self._observ, *rest = self.env.step(action)
        self._first = False
        return (self._observ, *rest)


def _trainer_steps(config, logdir, num_agents=3, num_steps=60):
    """What the trainer, acting with the mode, sends its environments' `step`.

    Returns:
      Arrays `[steps, agents, ...]` of the observations (a tuple of them for
      a Tuple space), the actions, and whether each step began an episode.
    """
    steps = [[] for _ in range(num_agents)]
    constructors = [
        functools.partial(
            environments.make_environment,
            functools.partial(_Recorder, gym.make(config.env), steps[index]),
            config.max_length, config.normalize_ranges, 1000 + index,
            observation_mask=config.observation_mask)
        for index in range(num_agents)]
    with tf.Graph().as_default():
        batch_env = run_api.define_batch_env(constructors, 'inprocess')
        graph = run_api.define_simulation_graph(batch_env, config.algorithm, config)
        store = run_api.define_checkpoints(logdir)
        with tf.compat.v1.Session(config=run_api.session_config()) as sess:
            run_api.initialize_variables(sess, store, resume=True)
            feed = {graph.is_training: False, graph.should_log: False, graph.force_reset: True}
            for _ in range(num_steps):
                sess.run(graph.done, feed)
                feed[graph.force_reset] = False
        batch_env.close()
    per_agent = [[_stack(column) for column in zip(*agent)] for agent in steps]
    return [_stack(columns, 1) for columns in zip(*per_agent)]


def _stack(values, axis=0):
    """Stack arrays, or tuples of arrays part by part."""
    return tf.nest.map_structure(lambda *parts: np.stack(parts, axis), *values)


# Acts with exports in a process that cannot import agents. Its argument is a
# JSON file of jobs [export directory, observations file, output file]; the
# observations are [steps, agents, ...]. For each job it writes the actions of
# the SavedModel's mode and sample, and of the TFLite file, and whether
# importing agents failed.
_ACT = '''
import importlib.abc, json, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'agents':
            raise ModuleNotFoundError(f'No module named {name!r}')
sys.meta_path.insert(0, Refuse())
import numpy as np
import tensorflow as tf

def act(model_dir, data_path):
    data = np.load(data_path)
    first = data['first']
    # One input `observ`, or `observ_0`, `observ_1`, ... for the parts of a Tuple.
    observ = {name: data[name] for name in data.files if name.startswith('observ')}
    model = tf.saved_model.load(model_dir)
    results = {}
    if 'initial_state' in model.signatures:
        initial = model.signatures['initial_state'](batch_size=tf.constant(first.shape[1]))
        for kind in ('serving_default', 'sample'):
            state, actions = {k: v.numpy() for k, v in initial.items()}, []
            for step in range(len(first)):
                for name in state:
                    state[name][first[step]] = initial[name].numpy()[first[step]]
                inputs = {name: tf.constant(part[step]) for name, part in observ.items()}
                out = model.signatures[kind](**inputs, **state)
                state = {name: out[name].numpy() for name in state}
                actions.append(out['action'].numpy())
            results[kind] = np.stack(actions)
        return results
    flat = {name: part.reshape((-1,) + part.shape[2:]) for name, part in observ.items()}
    for kind in ('serving_default', 'sample'):
        inputs = {name: tf.constant(part) for name, part in flat.items()}
        action = model.signatures[kind](**inputs)['action'].numpy()
        results[kind] = action.reshape(first.shape + action.shape[1:])
    interpreter = tf.lite.Interpreter(model_path=model_dir + '/policy.tflite')
    runner = interpreter.get_signature_runner('serving_default')
    action = runner(**flat)['action']
    results['tflite'] = action.reshape(first.shape + action.shape[1:])
    return results

with open(sys.argv[1]) as file_:
    jobs = json.load(file_)
results = [act(model_dir, data_path) for model_dir, data_path, _ in jobs]
try:
    import agents
    imported_agents = True
except ImportError:
    imported_agents = False
for (_, _, out_path), actions in zip(jobs, results):
    np.savez(out_path, imported_agents=np.array(imported_agents), **actions)
'''


def _act_without_agents(exports, directory):
    """Run `_ACT` isolated: no PYTHONPATH, no user site, a cwd outside the repository.

    Args:
      exports: Dict of a name to the export directory, the observations and the
        first flags to act on.
      directory: Directory for the script and its data.

    Returns:
      Dict of each name to the arrays `_ACT` wrote for it.
    """
    script, jobs_path = os.path.join(directory, 'act.py'), os.path.join(directory, 'jobs.json')
    with open(script, 'w') as file_:
        file_.write(_ACT)
    jobs = []
    for name, (outdir, observ, first) in exports.items():
        data, out = (
            os.path.join(directory, f'{name}-{kind}.npz') for kind in ('observ', 'actions'))
        parts = dict(observ=observ) if isinstance(observ, np.ndarray) else {
            f'observ_{index}': part for index, part in enumerate(observ)}
        np.savez(data, first=first, **parts)
        jobs.append((outdir, data, out))
    with open(jobs_path, 'w') as file_:
        json.dump(jobs, file_)
    environ = {key: value for key, value in os.environ.items() if not key.startswith('PYTHON')}
    result = subprocess.run(
        [sys.executable, '-I', script, jobs_path], cwd=directory, env=environ,
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return {name: dict(np.load(out)) for name, (_, _, out) in zip(exports, jobs)}


@pytest.mark.integration
@pytest.mark.parametrize('name', _CONFIGS)
def test_exported_actions_are_the_trainers_mode_in_environment_units(runs, name):
    config, _, outdir, (observ, action, first), acted = runs[name]
    env = gym.make(config.env)
    for part, space in zip(tf.nest.flatten(observ), tf.nest.flatten(
            env.observation_space.spaces if isinstance(
                env.observation_space, gym.spaces.Tuple) else env.observation_space)):
        assert part.dtype == space.dtype or space.dtype == np.int64  # As the env gives them.
    assert first[0].all() and first[1:].any()  # Episodes begin within the steps.
    assert not acted['imported_agents']
    exported = acted['serving_default']
    assert exported.dtype == env.action_space.dtype and exported.shape == action.shape
    if not isinstance(env.action_space, gym.spaces.Box):
        np.testing.assert_array_equal(exported, action)
        assert all(env.action_space.contains(each) for each in acted['sample'].reshape(
            -1, *env.action_space.shape))
    else:
        np.testing.assert_allclose(exported, action, rtol=0, atol=1e-5)
        assert np.all(env.action_space.low <= acted['sample'])
        assert np.all(acted['sample'] <= env.action_space.high)
        assert not np.allclose(acted['sample'], exported)
    if saved_policy.is_recurrent(config):
        assert 'tflite' not in acted
        assert not os.path.exists(os.path.join(outdir, saved_policy.TFLITE_FILE))
    else:
        assert acted['tflite'].dtype == exported.dtype
        np.testing.assert_allclose(acted['tflite'], exported, rtol=0, atol=1e-4)


@pytest.mark.integration
@pytest.mark.parametrize('name', _CONFIGS)
def test_export_json_describes_the_checkpoint_and_signatures(runs, name):
    config, logdir, outdir, _, _ = runs[name]
    with open(os.path.join(outdir, saved_policy.METADATA_FILE)) as file_:
        description = json.load(file_)
    assert description['checkpoint'] == tf.train.latest_checkpoint(logdir)
    assert description['step'] == config.steps and description['env'] == config.env
    signatures = description['signatures']
    names = {'serving_default', 'sample'} | (
        {'initial_state'} if saved_policy.is_recurrent(config) else set())
    assert set(signatures) == names
    inputs = signatures['serving_default']['inputs']
    space = gym.make(config.env).observation_space
    if isinstance(space, gym.spaces.Tuple):
        assert [inputs[f'observ_{index}']['shape'] for index in range(len(space))] == [
            [None]] * len(space)
    else:
        assert inputs['observ']['shape'] == [None, *space.shape]
    if saved_policy.is_recurrent(config):
        assert inputs['state']['shape'] == [None, config.policy_layers[-1]]
        assert signatures['initial_state']['inputs'] == {
            'batch_size': {'dtype': 'int32', 'shape': []}}


def _policy_without_mode(config, action_space, observations, length, state=None):
    output = networks.feed_forward_gaussian(config, action_space, observations, length, state)
    return output._replace(policy=object())


@pytest.mark.parametrize('config_name, changes, formats, message', [
    ('pendulum', dict(algorithm=object), None,
     'Cannot export a run of object: export builds the policy of PPO'),
    ('pendulum', dict(network=_policy_without_mode), None,
     "Cannot export the network's policy object: export needs a policy with mode"),
    ('pendulum_novel', {}, ['tflite'], 'TFLite export is for feed-forward policies'),
])
def test_a_run_that_cannot_be_exported_is_refused_and_leaves_nothing(
        tmp_path, config_name, changes, formats, message):
    config = run_api.make_config(f'{__name__}:{config_name}')
    with config.unlocked():
        config.update(changes)
    with pytest.raises(ConfigError, match=message):
        saved_policy.export(config, str(tmp_path), str(tmp_path / 'policy'), formats=formats)
    assert os.listdir(tmp_path) == []
