"""The `envpool` backend: the tasks envpool ships, stepped by its C++ thread pool.

envpool (`pip install -e '.[envpool]'`) steps many environments of the tasks
it implements (classic control, the MuJoCo tasks, Atari, ...) in C++ threads
of this process, far faster than Python processes can. The backend takes the
same environment constructors as the others: it builds each environment once
in this process to learn its task, seed and wrappers, closes it, and starts an
envpool of that task whose batches it passes through the same wrappers:

- Gymnasium's `TimeLimit` and `wrappers.LimitDuration` set envpool's
  `max_episode_steps` (the shortest of them);
- `wrappers.RangeNormalize`, `wrappers.ClipAction` and
  `wrappers.ConvertTo32Bit` map whole batches with the wrappers' own
  `action`, `observation` and `reward` methods;
- `wrappers.CacheSpaces` and Gymnasium's `OrderEnforcing` and
  `PassiveEnvChecker` change nothing.

So the batch has the same spaces as the other backends' and, from the same
state and for the same actions, the same observations and rewards, which
`envpool_test.py` checks against Gymnasium's tasks. Where envpool differs:

- Seeds: environment `i` is seeded once, when the pool starts, with the seed
  its constructor gave it (or envpool's default); `reset` cannot reseed.
  envpool draws initial states with generators of its own, so the same seed
  starts a different episode than in Gymnasium.
- Resets: stepping an environment whose episode ended, without resetting it,
  resets it, ignores the action and returns reward 0, where `LimitDuration`
  raises. `reset` takes no options.
- Infos: envpool's (`env_id`, `elapsed_step` and the task's reward terms).
- Timeouts: the pool runs in this process, so like `inprocess` it accepts the
  `timeout` option but cannot stop a task that hangs.
- `batch[i]` and attributes of single environments are not available.

Tasks envpool does not ship, and wrappers it cannot reproduce, are refused
with an error naming the backends that can host them.
"""

import warnings

import gymnasium
import numpy as np

from agents.tools import wrappers
from agents.tools.envs import contract

_INSTALL_HINT = "The envpool backend needs envpool: pip install -e '.[envpool]'"
# Wrappers the pool reproduces by mapping batches with their own methods.
_BATCH_WRAPPERS = (
    wrappers.ConvertTo32Bit, wrappers.ClipAction, wrappers.RangeNormalize,
    wrappers.CacheSpaces)
# Wrappers that change nothing the pool returns.
_INERT_WRAPPERS = (
    gymnasium.wrappers.OrderEnforcing, gymnasium.wrappers.PassiveEnvChecker)
_OTHER_BACKENDS = 'parallel, inprocess, process or ray'


class EnvpoolBatchEnv(contract.BaseBatchEnv):
    """The `envpool` backend: a batch of one envpool task, see the module docstring.

    Follows the contract of `contract.BaseBatchEnv`, with the differences the
    module docstring lists.
    """

    def __init__(self, constructors, num_threads=0, return_infos=True, timeout=None):
        """Learn the task from the constructors and start the pool.

        Args:
          constructors: Zero-argument callables, one per environment, each
            returning a Gymnasium task envpool ships, optionally in the
            wrappers listed in the module docstring; all the same task.
          num_threads: Threads of the pool; 0 lets envpool choose.
          return_infos: Return envpool's infos, one dict per environment; with
            False, `step` and `reset` return empty dicts, which is faster.
          timeout: Accepted like the process backends' option, and ignored:
            nothing can stop a task that hangs in this process.

        Raises:
          ImportError: If envpool is not installed.
          ValueError: If envpool lacks the task, or the constructors build
            different tasks or spaces.
          TypeError: If a constructor is not callable or the environment has a
            wrapper the pool cannot reproduce.
        """
        super().__init__()
        del timeout
        envpool = _import_envpool()
        tasks = [_Task(constructor) for constructor in contract.check_constructors(
            constructors, 'The envpool backend')]
        self._set_spaces([task.spaces for task in tasks])
        for index, task in enumerate(tasks[1:], 1):
            if task.description != tasks[0].description:
                raise ValueError(
                    f'The envpool backend runs one task: environment 0 is '
                    f'{tasks[0].description} but environment {index} is {task.description}.')
        task = tasks[0]
        if task.id not in envpool.list_all_envs():
            raise ValueError(
                f'envpool has no task {task.id!r}; the {_OTHER_BACKENDS} backend can host '
                f'it (--env_backend=parallel).')
        options = dict(num_envs=len(tasks), batch_size=len(tasks), num_threads=num_threads)
        if task.max_steps:
            options['max_episode_steps'] = task.max_steps
        seeds = [each.seed for each in tasks]
        if all(seed is not None for seed in seeds):
            options['seed'], options['env_seed'] = seeds[0], seeds
        with warnings.catch_warnings():
            # envpool builds float32 spaces from float64 bounds, which Gymnasium
            # notes when they are first built, here.
            warnings.filterwarnings('ignore', '.*precision lowered', UserWarning)
            self._pool = envpool.make_gymnasium(task.id, **options)
            self._pool_action_dtype = self._pool.action_space.dtype
            self._pool.observation_space.dtype  # noqa: B018  Built once, here.
        # The wrappers' maps: actions pass them outermost first, as the wrappers
        # step; observations and rewards innermost first.
        self._action_maps = [each.action for each in task.wrappers if hasattr(each, 'action')]
        self._observ_maps = [
            each.observation for each in reversed(task.wrappers)
            if hasattr(each, 'observation')]
        self._reward_maps = [
            each.reward for each in reversed(task.wrappers) if hasattr(each, 'reward')]
        self._return_infos = return_infos
        self._all = np.arange(len(tasks), dtype=np.int32)

    def _step(self, actions):
        for action_map in self._action_maps:
            actions = action_map(actions)
        observ, reward, terminated, truncated, info = self._pool.step(
            np.asarray(actions, self._pool_action_dtype), self._all)
        for reward_map in self._reward_maps:
            reward = reward_map(reward)
        return (
            self._observe(observ), np.asarray(reward, np.float32),
            np.asarray(terminated, bool), np.asarray(truncated, bool), self._infos(info))

    def _reset(self, indices, seeds, options):
        if any(seed is not None for seed in seeds):
            raise ValueError(
                'The envpool backend seeds each environment once, when it starts, with its '
                "constructor's seed; it cannot reseed at reset. Reset without seeds.")
        if options is not None:
            raise ValueError(f'The envpool backend resets without options, got {options!r}.')
        if not indices:
            return self._observ_layout.empty(0), ()
        observ, info = self._pool.reset(np.asarray(indices, np.int32))
        # envpool returns the environments in the order it reset them.
        row = {int(env_id): row for row, env_id in enumerate(info['env_id'])}
        order = [row[index] for index in indices]
        return self._observe(observ)[order], self._infos(info, order)

    def _close(self, timeout):
        del timeout
        self._pool.close()

    def _observe(self, observ):
        for observ_map in self._observ_maps:
            observ = observ_map(observ)
        return np.asarray(observ, self.observation_space.dtype)

    def _infos(self, info, order=None):
        count = len(info['env_id'])
        if not self._return_infos:
            return ({},) * count
        arrays = {key: value for key, value in info.items() if isinstance(value, np.ndarray)}
        rows = range(count) if order is None else order
        return tuple({key: value[row] for key, value in arrays.items()} for row in rows)


class _Task:
    """What an environment constructor builds: the envpool task, wrappers, seed, spaces.

    Raises:
      ValueError: If the task has arguments other than its defaults.
      TypeError: If the environment has a wrapper the pool cannot reproduce.
    """

    def __init__(self, constructor):
        env = constructor()
        try:
            self.spaces = (env.observation_space, env.action_space)
            spec = env.unwrapped.spec
            self.id = spec.id if spec else type(env.unwrapped).__name__
            arguments = {
                key: value for key, value in (spec.kwargs if spec else {}).items()
                if (key, value) != ('render_mode', None)}
            if spec and arguments != gymnasium.spec(spec.id).kwargs:
                raise ValueError(
                    f'The envpool backend runs {spec.id} with its default arguments and '
                    f'without rendering, not {arguments}; the {_OTHER_BACKENDS} backend can '
                    f'host it.')
            # The seed the environment was last reset with; envpool takes 32 bits.
            seed = env.unwrapped._np_random_seed
            self.seed = None if seed is None else int(seed) % 2 ** 31
            self.wrappers, self.max_steps = _wrappers_of(env, self.id)
        finally:
            env.close()
        names = ', '.join(type(each).__name__ for each in self.wrappers) or 'no wrappers'
        limit = f'at most {self.max_steps} steps' if self.max_steps else 'no time limit'
        self.description = f'{self.id} ({limit}) in {names}'


def _wrappers_of(env, task):
    """The wrappers the pool applies to batches, outermost first, and the time limit.

    Raises:
      TypeError: If a wrapper is one the pool cannot reproduce.
    """
    batch_wrappers, limits = [], []
    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env, _BATCH_WRAPPERS):
            batch_wrappers.append(env)
        elif isinstance(env, wrappers.LimitDuration):
            limits.append(env.duration)
        elif isinstance(env, gymnasium.wrappers.TimeLimit):
            limits.append(env._max_episode_steps)
        elif not isinstance(env, _INERT_WRAPPERS):
            raise TypeError(
                f'The envpool backend cannot reproduce the wrapper {type(env).__name__} '
                f'around {task}; the {_OTHER_BACKENDS} backend can host it.')
        env = env.env
    return batch_wrappers, min(limits) if limits else None


def _import_envpool():
    """Import envpool, or explain how to install it."""
    try:
        import envpool  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise ImportError(f'{_INSTALL_HINT} (import failed: {error}).') from error
    return envpool
