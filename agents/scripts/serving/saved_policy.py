"""A trained policy as a SavedModel and a TFLite file that act with TensorFlow alone.

The serving graph is the acting part of the training graph with the run's
environment wrappers folded in. It takes observations as the Gymnasium
environment returns them, zeroes the entries the run hides
(`observation_mask`), maps their range to [-1, 1] where the run's wrappers
did, normalizes them by the observation statistics of the checkpoint, runs
the network for one step, and maps its action to what the wrappers send to
the environment: clipped to the bounds and mapped back to the environment's
range for Box actions, integers counted from the space's `start` for Discrete
and MultiDiscrete ones, 0/1 for MultiBinary ones. Observations of integer
parts (Discrete, MultiDiscrete, MultiBinary) are taken as the environment
gives them and encoded inside, so serving code needs no knowledge of the
encoding. It is built with PPO's own
`Policy`, so the checkpoint's variables restore into it. The SavedModel maps
ranges in float64, as the wrappers do, so its actions are the trainer's; the
TFLite file, whose built-in operations have no float64 arithmetic, in float32.

Signatures of the SavedModel (`B` is the batch size):
- `serving_default`: `observ [B, ...]` -> `action [B, ...]`, the policy's mode.
  A Tuple or Dict observation space takes one input per part, `observ_0`,
  `observ_1`, ... in the order of its parts (a Dict's by sorted key). A run
  with `previous_action` takes the observation as `observ_0` and the previous
  action as `observ_1` (`wrappers.PreviousAction`'s null action at the start).
- `sample`: the same, with an action sampled from the policy.
- Recurrent networks take their state beside the observations and return the
  next one (`state`, or `state_0`, `state_1`, ... for a nested state), and add
  `initial_state`: `batch_size []` -> the state at the start of an episode.

The TFLite file of a feed-forward policy has the `serving_default` and
`sample` signatures.
"""

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

from absl import logging
import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents.algorithms.ppo import ppo
from agents.scripts import environments
from agents.tools import checkpoints
from agents.tools import in_graph_env
from agents.tools import nested
from agents.tools import spaces
from agents.tools import wrappers
from agents.tools.schema import ConfigError

TFLITE_FILE = 'policy.tflite'
METADATA_FILE = 'export.json'

# The wrappers `environments.make_environment` puts around the Gymnasium environment.
_RUN_WRAPPERS = (
    wrappers.MaskObservation, wrappers.LimitDuration, wrappers.RangeNormalize, wrappers.ClipAction,
    wrappers.ZeroBasedActions, wrappers.ConvertTo32Bit, wrappers.CacheSpaces)

Units = collections.namedtuple(
    'Units', 'observation_space, action_space, agent_action_space, observ_mask, observ_range, '
    'action_bounds, action_range')
Units.__doc__ = """How a run's wrappers map the environment's observations and actions.

Attributes:
  observation_space: Observation space of the Gymnasium environment.
  action_space: Action space of the Gymnasium environment.
  agent_action_space: Action space the network acts in.
  observ_mask: Boolean array of the observation's shape, true at the entries
    the run hides by zeroing them (`observation_mask`), or None.
  observ_range: Float64 arrays `(low, high - low)` of the observations mapped
    to [-1, 1], or None.
  action_bounds: Arrays `(low, high)` that Box actions are clipped to before
    they are mapped, or None.
  action_range: Float64 arrays `(low, high - low)` the actions are mapped to
    from [-1, 1], or None.
"""


def is_recurrent(config):
    """Whether the run's network carries a state from step to step, as PPO decides."""
    return bool(getattr(config.network, 'is_recurrent', False))


def environment_units(config):
    """Read how the run's wrappers map observations and actions from one environment.

    Raises:
      ConfigError: If the environment cannot be made, or a Box part of its
        observations is not numeric.
    """
    try:
        env = environments.environment_constructors(config, 1)[0]()
    except ValueError as error:
        raise ConfigError(str(error)) from None
    try:
        agent_action_space = env.action_space
        layers, inner = {}, env
        while isinstance(inner, _RUN_WRAPPERS):
            layers[type(inner)] = inner
            inner = inner.env
        observation_space, action_space = inner.observation_space, inner.action_space
    finally:
        env.close()
    for part in nested.flatten(spaces.leaf_spaces(observation_space)):
        if isinstance(part, gym.spaces.Box) and not np.issubdtype(part.dtype, np.number):
            raise ConfigError(
                f'Cannot export a policy over the observation space {observation_space}: '
                f'its Box parts must be numeric.')
    normalize = layers.get(wrappers.RangeNormalize)
    clip = layers.get(wrappers.ClipAction)
    mask = None
    if config.get('observation_mask') and config.get('previous_action'):
        raise ConfigError(
            'Cannot export a run with both observation_mask and previous_action: the export '
            'zeroes hidden entries of Box observations only.')
    if config.get('observation_mask'):
        mask = np.zeros(observation_space.shape, bool)
        mask.reshape(-1)[list(config.observation_mask)] = True
    return Units(
        observation_space, action_space, agent_action_space, mask,
        normalize and normalize.observ_range,
        clip and (clip.env.action_space.low, clip.env.action_space.high),
        normalize and normalize.action_range)


def export(config, logdir, outdir, checkpoint=None, formats=None, force=False):
    """Write the policy of a run's checkpoint as a SavedModel and a TFLite file.

    Everything is written into a new directory beside `outdir`, which then
    takes its place, so a failed export leaves `outdir` as it was.

    Args:
      config: Configuration of the run.
      logdir: Directory of the run and its checkpoints.
      outdir: Directory to write; it holds the SavedModel, `policy.tflite` and
        `export.json`, which describes the export.
      checkpoint: Checkpoint path prefix; the newest of the run that restores if None.
      formats: Formats to write, 'saved_model' and 'tflite' (for feed-forward
        policies only); None for both where the policy allows.
      force: Replace `outdir` if it exists.

    Raises:
      ConfigError: If the run cannot be exported or `outdir` cannot be written.

    Returns:
      The description written to `export.json`.
    """
    if not (isinstance(config.algorithm, type) and issubclass(config.algorithm, ppo.PPO)):
        raise ConfigError(
            f'Cannot export a run of {getattr(config.algorithm, "__name__", config.algorithm)}: '
            f'export builds the policy of PPO (algorithm: ppo).')
    if formats is None:
        formats = ('saved_model',) if is_recurrent(config) else ('saved_model', 'tflite')
    formats = tuple(formats)
    if 'tflite' in formats and is_recurrent(config):
        raise ConfigError(
            'TFLite export is for feed-forward policies; export this recurrent policy with '
            '--format=saved_model.')
    if os.path.exists(outdir) and not force:
        raise ConfigError(f'{outdir} exists: pass --force to replace it, or another --outdir.')
    units = environment_units(config)
    parent = os.path.dirname(os.path.abspath(outdir))
    try:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(dir=parent, prefix=os.path.basename(outdir) + '.partial-')
        os.chmod(staging, 0o777 & ~_umask())
    except OSError as error:
        raise ConfigError(
            f'Cannot write to {parent}: {error.strerror}. Pass an --outdir you can write '
            f'to.') from None
    try:
        model_dir = os.path.join(staging, 'saved_model')
        checkpoint, signatures = _write_saved_model(
            config, units, logdir, checkpoint, model_dir, tf.float64)
        if 'saved_model' in formats:
            for name in os.listdir(model_dir):
                os.replace(os.path.join(model_dir, name), os.path.join(staging, name))
        if 'tflite' in formats:
            # TFLite's built-in operations have no float64 arithmetic.
            _write_saved_model(config, units, logdir, checkpoint, model_dir, tf.float32, True)
            _write_tflite(model_dir, os.path.join(staging, TFLITE_FILE))
        shutil.rmtree(model_dir)
        description = _describe(config, units, checkpoint, signatures, formats)
        with open(os.path.join(staging, METADATA_FILE), 'w') as file_:
            json.dump(description, file_, indent=2)
        _replace_directory(staging, outdir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logging.info('Exported the policy of %s to %s.', checkpoint, outdir)
    return description


def define_serving_graph(config, units, mapping_dtype=tf.float64):
    """Build the serving graph in the default graph; return its signatures.

    Args:
      config: Configuration of the run.
      units: `Units` of the run's environment.
      mapping_dtype: Dtype of the range mapping's arithmetic: float64 computes
        it as the wrappers do, so the actions are the trainer's; float32 for
        runtimes without float64 arithmetic.

    Raises:
      ConfigError: If the network's policy has no mode and sample of the action's shape.

    Returns:
      Dict from signature name to a pair of dicts, the named input and output tensors.
    """
    space = units.observation_space
    parts = spaces.leaf_spaces(space)
    policy = ppo.Policy(
        config, space, units.agent_action_space,
        nested.map(lambda part: tf.zeros(spaces.space_shape(part), tf.float32), parts))
    with tf.name_scope('serving'):
        observ = nested.map(
            lambda part: tf.compat.v1.placeholder(
                tf.as_dtype(part.dtype), [None, *spaces.space_shape(part)], 'observ'), parts)
        agent_observ = _agent_observ(observ, units, mapping_dtype)
        inputs, state = _named('observ', observ), None
        if is_recurrent(config):
            template = policy.step(agent_observ).state
            state = tf.nest.map_structure(
                lambda part: tf.compat.v1.placeholder(part.dtype, [None, *part.shape[1:]]),
                template)
            inputs.update(_named('state', state))
        output = policy.step(agent_observ, state)
        _check_policy(output.policy, units.agent_action_space)
        signatures = {}
        for name, action in (
                ('serving_default', output.policy.mode()), ('sample', output.policy.sample())):
            outputs = {'action': _environment_action(action[:, 0], units, mapping_dtype)}
            if state is not None:
                outputs.update(_named('state', output.state))
            signatures[name] = inputs, outputs
        if state is not None:
            batch_size = tf.compat.v1.placeholder(tf.int32, [], 'batch_size')
            initial = tf.nest.map_structure(
                lambda part: tf.zeros(
                    tf.concat([[batch_size], part.shape[1:]], 0), part.dtype), template)
            signatures['initial_state'] = {'batch_size': batch_size}, _named('state', initial)
    return signatures


def _write_saved_model(
        config, units, logdir, checkpoint, directory, mapping_dtype, replace=False):
    """Restore the checkpoint into the serving graph and save it.

    Returns:
      Tuple of the checkpoint restored and the signatures.
    """
    if replace:
        shutil.rmtree(directory)
    with tf.Graph().as_default(), tf.device('/cpu:0'):
        signatures = define_serving_graph(config, units, mapping_dtype)
        saver = tf.compat.v1.train.Saver(tf.compat.v1.global_variables())
        with tf.compat.v1.Session() as sess:
            try:
                checkpoint = checkpoints.Checkpoints(saver, logdir).restore(sess, checkpoint)
            except checkpoints.CheckpointError as error:
                raise ConfigError(
                    f'{error} Export a run of PPO with the network it trained, and pass '
                    f'--checkpoint=<path prefix> of a checkpoint that restores.') from None
            builder = tf.compat.v1.saved_model.Builder(directory)
            builder.add_meta_graph_and_variables(
                sess, [tf.saved_model.SERVING], signature_def_map={
                    name: tf.compat.v1.saved_model.predict_signature_def(inputs, outputs)
                    for name, (inputs, outputs) in signatures.items()},
                strip_default_attrs=True)
            builder.save()
    return checkpoint, signatures


# Converts a SavedModel's two signatures to a TFLite file; argv: the SavedModel
# directory, the file to write.
_CONVERT_TO_TFLITE = """
import sys
from agents.tools import process_memory
with process_memory.skipping_unused_imports():
    import tensorflow as tf
converter = tf.lite.TFLiteConverter.from_saved_model(
    sys.argv[1], signature_keys=['serving_default', 'sample'])
with open(sys.argv[2], 'wb') as file_:
    file_.write(converter.convert())
"""


def _write_tflite(model_dir, path):
    """Convert the SavedModel in a process of its own.

    The converter takes several signatures only when TensorFlow executes
    eagerly, which a process that has built graphs may no longer do.
    """
    result = subprocess.run(
        [sys.executable, '-c', _CONVERT_TO_TFLITE, model_dir, path], capture_output=True,
        text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
    if result.returncode:
        lines = result.stderr.strip().splitlines() or ['no error message']
        raise RuntimeError(f'Converting the SavedModel to TFLite failed: {lines[-1]}')


def _agent_observ(observ, units, mapping_dtype):
    """Observations as the wrappers pass them: masked, float32, mapped to [-1, 1] if they were.

    Integer parts become int32, as `ConvertTo32Bit` makes them; the wrappers
    mask and map lone Box observations only.
    """
    with tf.name_scope('agent_observ'):
        if not isinstance(units.observation_space, gym.spaces.Box):
            return nested.map(
                lambda part, space: tf.cast(part, in_graph_env.space_dtype(space)),
                observ, spaces.leaf_spaces(units.observation_space))
        if units.observ_mask is not None:
            observ = tf.where(units.observ_mask, tf.zeros_like(observ), observ)
        if units.observ_range is None:
            return tf.cast(observ, tf.float32)
        low, width = (tf.constant(each, mapping_dtype) for each in units.observ_range)
        # The operations of RangeNormalize.observation, in its order.
        shifted = tf.cast(observ, mapping_dtype) - low
        return tf.cast((shifted + shifted) / width - 1.0, tf.float32)


def _environment_action(action, units, mapping_dtype):
    """The network's actions as the wrappers send them to the environment."""
    with tf.name_scope('environment_action'):
        dtype = tf.as_dtype(units.action_space.dtype)
        if isinstance(units.action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
            start = tf.constant(units.action_space.start, dtype)
            return tf.add(tf.cast(action, dtype), start, name='action')
        if isinstance(units.action_space, gym.spaces.MultiBinary):
            return tf.cast(action, dtype, name='action')
        if units.action_bounds is not None:
            low, high = units.action_bounds
            if not np.all(np.isinf(low) & np.isinf(high)):
                action = tf.clip_by_value(
                    action, tf.constant(low, action.dtype), tf.constant(high, action.dtype))
        if units.action_range is not None:
            # The operations of RangeNormalize.action, in its order and dtypes.
            low, width = (tf.constant(each, mapping_dtype) for each in units.action_range)
            action = tf.cast((action + 1.0) / 2.0, mapping_dtype) * width + low
        return tf.cast(action, dtype, name='action')


def _check_policy(policy, action_space):
    """Raise a ConfigError unless the policy has a mode and a sample of the action's shape."""
    if not (callable(getattr(policy, 'mode', None)) and
            callable(getattr(policy, 'sample', None))):
        raise ConfigError(
            f'Cannot export the network\'s policy {type(policy).__name__}: export needs a '
            f'policy with mode() and sample(), such as DiagonalGaussian or Categorical.')
    shape = policy.mode().shape[2:]
    if not shape.is_compatible_with(action_space.shape):
        raise ConfigError(
            f'Cannot export the network\'s policy: its actions have the shape {shape}, but '
            f'the environment takes {action_space.shape}.')


def _named(prefix, structure):
    """The tensors of a nested structure named `prefix`, or `prefix_<i>` if several."""
    parts = tf.nest.flatten(structure)
    if len(parts) == 1:
        return {prefix: parts[0]}
    return {f'{prefix}_{index}': part for index, part in enumerate(parts)}


def _describe(config, units, checkpoint, signatures, formats):
    """What `export.json` says about the export: its source, environment and signatures."""
    env = config.env if isinstance(config.env, str) else getattr(
        config.env, '__qualname__', repr(config.env))
    return dict(
        env=env, max_length=config.max_length, checkpoint=os.path.abspath(checkpoint),
        step=int(checkpoint.rsplit('-', 1)[1]), recurrent=is_recurrent(config),
        formats=list(formats),
        files=(['saved_model.pb', 'variables'] if 'saved_model' in formats else []) +
        ([TFLITE_FILE] if 'tflite' in formats else []),
        observation_space=str(units.observation_space),
        action_space=str(units.action_space),
        signatures={
            name: {kind: {key: _describe_tensor(tensor) for key, tensor in tensors.items()}
                   for kind, tensors in zip(('inputs', 'outputs'), pair)}
            for name, pair in signatures.items()})


def _describe_tensor(tensor):
    shape = [None if size is None else int(size) for size in tensor.shape.as_list()]
    return dict(dtype=tensor.dtype.name, shape=shape)


def _umask():
    """The process's file mode creation mask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _replace_directory(staging, outdir):
    """Rename `staging` to `outdir`; an existing `outdir` is removed once it is replaced."""
    if not os.path.exists(outdir):
        os.replace(staging, outdir)
        return
    previous = tempfile.mkdtemp(
        dir=os.path.dirname(os.path.abspath(outdir)),
        prefix=os.path.basename(outdir) + '.replaced-')
    os.rmdir(previous)
    os.replace(outdir, previous)
    os.replace(staging, outdir)
    if os.path.isdir(previous) and not os.path.islink(previous):
        shutil.rmtree(previous)
    else:
        os.remove(previous)
