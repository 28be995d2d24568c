"""`SB3VecEnv`: any backend of the batch contract as a Stable-Baselines3 VecEnv.

Needs Stable-Baselines3 (`pip install -e '.[sb3]'`). Importing SB3 loads
PyTorch and TensorBoard, and TensorBoard loads TensorFlow when it is
installed; this module loads PyTorch's Triton, when installed, before them
(see `load_order`) and nothing else beyond SB3.
"""

import collections
import warnings

import numpy as np

from agents.tools import load_order
from agents.tools.envs import access
from agents.tools.envs import backends
from agents.tools.envs import batching
from agents.tools.envs import errors
from agents.tools.envs import final_observations

load_order.load_triton_before_tensorflow()
try:
    from stable_baselines3.common.vec_env import VecEnv
except ImportError as error:
    raise ImportError(
        f"SB3VecEnv needs Stable-Baselines3: pip install -e '.[sb3]' (import failed: "
        f'{error}).') from error


class SB3VecEnv(VecEnv):
    """A Stable-Baselines3 `VecEnv` whose environments run on a backend of the batch contract.

    A drop-in for `SubprocVecEnv(env_fns)` that steps the environments on the
    `parallel` backend's shared-memory workers, or on any other backend:

        env = SB3VecEnv([lambda: gymnasium.make('HalfCheetah-v5')] * 8)
        model = stable_baselines3.PPO('MlpPolicy', env, seed=0).learn(50_000)

    It behaves as SB3's `DummyVecEnv` with the same constructors: from the
    same seeds and actions it returns bit-identical observations, float32
    rewards, dones and infos. An environment whose episode ended is reset in
    the same step; its info holds the last observation under
    'terminal_observation' and whether a time limit cut the episode under
    'TimeLimit.truncated', and `reset_infos` the info of its reset. `seed` and
    `set_options` apply at the next `reset`. `env_method`, `get_attr`,
    `set_attr`, `env_is_wrapped` and `render` reach the environments where
    they run, at `indices` that count from the end when negative, as in a
    list; `envs` lists the environments themselves on the inprocess backend,
    and views reading their attributes where they run on the others. Dict
    observations come in an OrderedDict, as DummyVecEnv returns
    them. Actions come as a batch, or for Dict and Tuple action spaces also as
    a list of one action per environment; float actions for an integer Box
    space are converted to its dtype. Constructors that return one shared
    environment object are refused with ValueError, as DummyVecEnv refuses
    them.

    What differs from DummyVecEnv:
    - An action batch longer than `num_envs` raises ValueError, where
      DummyVecEnv steps with its first rows: a longer batch is a mistake
      (a batch meant for another vector environment) better caught at once.
    - An exception in an environment that runs in a worker process arrives as
      `WorkerError` (naming the exception, with the worker's traceback); a
      worker that dies or does not answer in time raises `WorkerDiedError` or
      `WorkerTimeoutError`, after which the backend has closed itself.
    - On the shared-memory `parallel` backend, the environments are built in
      `final_observations.KeepFinal`, which carries the last observation of
      an episode, as the environment returned it, to 'terminal_observation'
      (`env_is_wrapped` does not count it).
    """

    def __init__(self, env_fns, backend='parallel', **options):
        """Build the environments on the backend.

        Args:
          env_fns: Zero-argument callables, one per environment, each returning
            a Gymnasium environment; all with the same spaces.
          backend: Name of the backend, a key of `envs.BACKENDS`.
          **options: Options of the backend, such as `num_workers` or `timeout`.

        Raises:
          ValueError: If the backend is unknown, there are no constructors or
            their spaces differ.
        """
        if backend == 'parallel':
            env_fns = final_observations.wrap(env_fns)
        self._batch = backends.make_batch_env(backend, env_fns, **options)
        try:
            super().__init__(
                len(self._batch), self._batch.observation_space, self._batch.action_space)
            self.metadata = getattr(self._batch, 'metadata', self.metadata)
        except BaseException:
            self._batch.close()
            raise
        self.backend = backend
        self._observ_layout = batching.BatchLayout(self.observation_space, 'observation')
        self._action_layout = batching.BatchLayout(self.action_space, 'action')
        self._actions = None

    @property
    def batch(self):
        """The backend's batch environment (`contract.BaseBatchEnv`) underneath."""
        return self._batch

    @property
    def envs(self):
        """List of the environments, or views of them (see `BaseBatchEnv.environments`)."""
        return self._batch.environments()

    def reset(self):
        """Reset every environment with the seeds and options set for this reset.

        Returns:
          The batched first observations.
        """
        observ = self._observ_layout.empty(self.num_envs)
        # Environments without options reset with None, as DummyVecEnv resets them.
        for options, indices in self._options_groups():
            first_observ, infos = self._batch.reset(
                indices, [self._seeds[index] for index in indices], options)
            self._observ_layout.assign(observ, indices, first_observ)
            for index, info in zip(indices, infos):
                self.reset_infos[index] = info
        self._reset_seeds()
        self._reset_options()
        return self._as_sb3(observ)

    def step_async(self, actions):
        """Keep the actions for `step_wait`, which steps the environments.

        Args:
          actions: A batch of actions; for Dict and Tuple action spaces also,
            as DummyVecEnv takes them, a list of one action per environment.
        """
        if self._action_layout.nested and isinstance(actions, list):
            if len(actions) != self.num_envs:
                raise ValueError(
                    f'Expected one action per environment ({self.num_envs}), got a list of '
                    f'{len(actions)}.')
            actions = self._action_layout.stack(actions)
        self._actions = actions

    def step_wait(self):
        """Step every environment and reset those whose episode ended.

        Returns:
          The batched observations (first ones of the environments reset),
          float32 rewards, bool dones and a list of info dicts.
        """
        observ, reward, terminated, truncated, infos = self._batch.step(self._actions)
        dones = terminated | truncated
        infos = [
            dict(info, **{'TimeLimit.truncated': bool(cut and not ended)})
            for info, cut, ended in zip(infos, truncated.tolist(), terminated.tolist())]
        ended = np.flatnonzero(dones)
        if len(ended):
            own = final_observations.pop(infos, ended)
            if own is None:
                own = self._batch.own_observations(ended)
            for position, index in enumerate(ended):
                infos[index]['terminal_observation'] = (
                    own[position] if own is not None else self._observ_layout.row(observ, index))
            first_observ, reset_infos = self._batch.reset(ended)
            self._observ_layout.assign(observ, ended, first_observ)
            for index, info in zip(ended, reset_infos):
                self.reset_infos[index] = info
        return self._as_sb3(observ), reward, dones, infos

    def close(self):
        """Close the backend: its environments, processes and shared memory."""
        self._batch.close()

    def get_attr(self, attr_name, indices=None):
        """List of an attribute of the environments at `indices`, through their wrappers.

        On a backend that does not reach single environments (envpool), the
        batch's attribute, which all its environments share.

        Raises:
          AttributeError: If an environment has no such attribute.
        """
        if not self._batch.reaches_environments:
            return [getattr(self._batch, attr_name)] * len(self._get_indices(indices))
        try:
            return self._apply(access.get_attribute, attr_name, indices=indices)
        except errors.WorkerError as error:
            if error.exception_type == 'AttributeError':
                raise AttributeError(str(error)) from error
            raise

    def set_attr(self, attr_name, value, indices=None):
        """Set an attribute on the outermost wrapper of the environments at `indices`."""
        self._apply(access.set_outermost, attr_name, value, indices=indices)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        """List of the results of a method of the environments at `indices`."""
        return self._apply(
            access.call_method, method_name, method_args, method_kwargs, indices=indices)

    def env_is_wrapped(self, wrapper_class, indices=None):
        """List of whether the environments at `indices` are wrapped in `wrapper_class`."""
        return self._apply(
            access.is_wrapped, access.class_name(wrapper_class), indices=indices)

    def get_images(self):
        """The environments' frames, rendered where they run, if they render rgb arrays."""
        if self.render_mode != 'rgb_array':
            warnings.warn(
                f'The render mode is {self.render_mode}, but this method assumes it is '
                f'`rgb_array` to obtain images.')
            return [None] * self.num_envs
        return self.env_method('render')

    def _as_sb3(self, observ):
        """Dict observations in an OrderedDict, as SB3's own vector environments return them."""
        return collections.OrderedDict(observ) if isinstance(observ, dict) else observ

    def _apply(self, function, *args, indices):
        return self._batch.apply(function, *args, indices=self._get_indices(indices))

    def _get_indices(self, indices):
        """The indices as SB3 takes them (None, an int or a sequence), negative ones from the end.

        Raises:
          IndexError: If an index is out of range, as in a list.
        """
        indices = super()._get_indices(indices)
        size = self.num_envs
        for index in indices:
            if not -size <= index < size:
                raise IndexError(
                    f'Environment index {index} is out of range: the batch has {size} '
                    f'environments.')
        return [index % size for index in indices]

    def _options_groups(self):
        """Pairs of reset options (None for none) and the indices of the environments they go to."""
        groups = []
        for index, options in enumerate(self._options):
            options = options or None
            for group_options, indices in groups:
                if group_options == options:
                    indices.append(index)
                    break
            else:
                groups.append((options, [index]))
        return groups
