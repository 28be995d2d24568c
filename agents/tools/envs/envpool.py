"""The `envpool` backend: the tasks envpool ships, stepped by its C++ thread pool.

envpool (`pip install -e '.[envpool]'`) steps many environments of the tasks
it implements in C++ threads of this process, far faster than Python
processes can. The backend takes the same environment constructors as the
others: it builds each environment once in this process to learn its task,
arguments, seed and wrappers, closes it, and starts an envpool of that task
whose batches it passes through the same wrappers:

- Gymnasium's `TimeLimit` and `wrappers.LimitDuration` set envpool's
  `max_episode_steps` (the shortest of them; without either, episodes have
  no limit, where envpool's tasks have their own);
- `wrappers.RangeNormalize`, `wrappers.ClipAction` and
  `wrappers.ConvertTo32Bit` map whole batches with the wrappers' own
  `action`, `observation` and `reward` methods;
- `wrappers.CacheSpaces` and Gymnasium's `OrderEnforcing` and
  `PassiveEnvChecker` change nothing;
- task arguments given to `gymnasium.make` (such as `reset_noise_scale`)
  pass to envpool's task of the same name.

So the batch has the same spaces as the other backends'. `envpool_test.py`
compares it with Gymnasium's tasks step by step: Pendulum-v1, CartPole-v1,
Acrobot-v1, MountainCar-v0, MountainCarContinuous-v0 and every MuJoCo v5 task
envpool ships. From the same state and for the same action they give the
same observation and reward (to 1e-5), except where envpool differs:

- Pendulum-v1: envpool turns the pendulum by its new velocity before clipping
  the velocity to 8, Gymnasium after; on steps where the velocity is clipped
  the angle differs (by up to about 0.05).
- MuJoCo tasks: envpool's MuJoCo build rounds differently, by about 1e-7 per
  step, which contacts amplify over tens of steps (Ant-v5, Humanoid-v5,
  HumanoidStandup-v5); the contact forces that Ant, Humanoid and
  HumanoidStandup observe agree only to about 1e-3 (relative).
- Seeds: environment `i` is seeded once, when the pool starts, with the seed
  its constructor reset it with (a random one if none); `reset` cannot
  reseed. envpool draws initial states with generators of its own, so the
  same seed starts a different episode than in Gymnasium.
- Resets: stepping an environment whose episode ended, without resetting it,
  resets it, ignores the action and returns reward 0, where `LimitDuration`
  raises. `reset` takes no options.
- Infos: envpool's (`env_id`, `elapsed_step` and the task's reward terms).
- Timeouts: the pool runs in this process, so like `inprocess` it accepts the
  `timeout` option but cannot stop a task that hangs.
- Rewards: envpool computes them in float32; `reward_dtype = np.float64`
  widens them, but cannot make them exact.
- `batch[i]`, `apply`, `call` and attributes of single environments are not
  available.

Other tasks envpool and Gymnasium share under one id (Box2D, toy text) are
envpool's own implementations of them, which the tests do not compare. Tasks
envpool does not ship, arguments and wrappers it cannot reproduce, and tasks
whose spaces envpool lays out differently (Blackjack-v1) are refused with an
error naming the backends that can host them.
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
# Options of envpool's pools rather than of their tasks: not task arguments.
_POOL_OPTIONS = {
    'num_envs', 'batch_size', 'num_threads', 'max_num_players', 'thread_affinity_offset',
    'base_path', 'seed', 'env_seed', 'gym_reset_return_info', 'max_episode_steps', 'xml_file'}
# envpool's episode limit for a task without one: the largest it takes.
_UNLIMITED = 2 ** 31 - 1


class EnvpoolBatchEnv(contract.BaseBatchEnv):
    """The `envpool` backend: a batch of one envpool task, see the module docstring.

    Follows the contract of `contract.BaseBatchEnv`, with the differences the
    module docstring lists.
    """

    # envpool's pools do not render; a constructor asking for a render mode is refused.
    render_mode = None

    def __init__(self, constructors, num_threads=0, return_infos=True, timeout=None):
        """Learn the task from the constructors and start the pool.

        Args:
          constructors: Zero-argument callables, one per environment, each
            returning a Gymnasium task envpool ships, optionally in the
            wrappers listed in the module docstring; all the same task with
            the same arguments.
          num_threads: Threads of the pool; 0 lets envpool choose.
          return_infos: Return envpool's infos, one dict per environment; with
            False, `step` and `reset` return empty dicts, which is faster.
          timeout: Accepted like the process backends' option, and ignored:
            nothing can stop a task that hangs in this process.

        Raises:
          ImportError: If envpool is not installed.
          ValueError: If envpool lacks the task or one of its arguments, lays
            out its spaces differently, or the constructors build different
            tasks or spaces.
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
        with warnings.catch_warnings():
            # envpool builds float32 spaces from float64 bounds, which Gymnasium
            # notes when they are first built, here.
            warnings.filterwarnings('ignore', '.*precision lowered', UserWarning)
            self._pool = envpool.make_gymnasium(task.id, **_pool_options(
                envpool, task, [each.seed for each in tasks], num_threads))
            try:
                _check_pool_spaces(self._pool, task)
            except ValueError:
                self._pool.close()
                raise
        self._pool_action_dtype = self._pool.action_space.dtype
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

    def _step(self, actions, indices):
        for action_map in self._action_maps:
            actions = action_map(actions)
        observ, reward, terminated, truncated, info = self._pool.step(
            np.asarray(actions, self._pool_action_dtype),
            self._all if indices is None else np.asarray(indices, np.int32))
        for reward_map in self._reward_maps:
            reward = reward_map(reward)
        order = _rows_in_order(info, self._all if indices is None else indices)
        return (
            self._observe(observ)[order], np.asarray(reward)[order],
            np.asarray(terminated, bool)[order], np.asarray(truncated, bool)[order],
            self._infos(info, order))

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
        order = _rows_in_order(info, indices)
        return self._observe(observ)[order], self._infos(info, order)

    def _close(self, timeout):
        del timeout
        self._pool.close()

    def _observe(self, observ):
        for observ_map in self._observ_maps:
            observ = observ_map(observ)
        return np.asarray(observ, self.observation_space.dtype)

    def _infos(self, info, order):
        if not self._return_infos:
            return ({},) * len(order)
        arrays = {key: value for key, value in info.items() if isinstance(value, np.ndarray)}
        return tuple({key: value[row] for key, value in arrays.items()} for row in order)


def _rows_in_order(info, indices):
    """The rows of envpool's results that hold the environments at `indices`, in their order.

    envpool returns the environments in the order they finished.
    """
    row = {int(env_id): row for row, env_id in enumerate(info['env_id'])}
    return [row[index] for index in indices]


class _Task:
    """What an environment constructor builds: the task, its arguments, wrappers, seed, spaces.

    Raises:
      TypeError: If the environment has a wrapper the pool cannot reproduce.
    """

    def __init__(self, constructor):
        env = constructor()
        try:
            self.spaces = (env.observation_space, env.action_space)
            self.task_spaces = (env.unwrapped.observation_space, env.unwrapped.action_space)
            spec = env.unwrapped.spec
            self.id = spec.id if spec else type(env.unwrapped).__name__
            defaults = gymnasium.spec(spec.id).kwargs if spec else {}
            # The arguments given beyond the registered ones, such as
            # `gymnasium.make('Ant-v5', reset_noise_scale=0)`.
            self.arguments = {
                key: value for key, value in (spec.kwargs if spec else {}).items()
                if (key, value) != ('render_mode', None) and
                (key not in defaults or defaults[key] != value)}
            # The seed the environment was last reset with; envpool takes 32 bits.
            seed = env.unwrapped._np_random_seed
            self.seed = None if seed is None else int(seed) % 2 ** 31
            self.wrappers, self.max_steps = _wrappers_of(env, self.id)
        finally:
            env.close()
        task = f'{self.id}({self.arguments})' if self.arguments else self.id
        names = ', '.join(type(each).__name__ for each in self.wrappers) or 'no wrappers'
        limit = f'at most {self.max_steps} steps' if self.max_steps else 'no time limit'
        self.description = f'{task} ({limit}) in {names}'


def _pool_options(envpool, task, seeds, num_threads):
    """The options of `envpool.make_gymnasium` that start a pool of the task.

    Args:
      envpool: The envpool module.
      task: The `_Task` of every environment.
      seeds: The seed of each environment, or None where it has none.
      num_threads: Threads of the pool; 0 lets envpool choose.

    Raises:
      ValueError: If envpool lacks the task or one of its arguments.
    """
    if task.id not in envpool.list_all_envs():
        raise ValueError(
            f'envpool has no task {task.id!r}; the {_OTHER_BACKENDS} backend can host '
            f'it (--env_backend=parallel).')
    shared = set(envpool.make_spec(task.id).config._fields) - _POOL_OPTIONS
    unknown = sorted(set(task.arguments) - shared)
    if unknown:
        raise ValueError(
            f'envpool runs {task.id} without the arguments '
            f'{", ".join(f"{key}={task.arguments[key]!r}" for key in unknown)}; the '
            f'{_OTHER_BACKENDS} backend can host it.')
    # envpool draws the seeds of unseeded environments from its own defaults,
    # seed + i, so they are drawn here to keep unseeded runs apart.
    seeds = [
        int(np.random.SeedSequence().generate_state(1)[0]) % 2 ** 31 if seed is None else seed
        for seed in seeds]
    return dict(
        task.arguments, num_envs=len(seeds), batch_size=len(seeds), num_threads=num_threads,
        seed=seeds[0], env_seed=seeds, max_episode_steps=task.max_steps or _UNLIMITED)


def _check_pool_spaces(pool, task):
    """Check that the pool's spaces are laid out as the Gymnasium task's.

    Raises:
      ValueError: If they differ, as envpool's Blackjack-v1 returns the
        Tuple observations of Gymnasium's as one array.
    """
    for kind, pool_space, space in zip(
            ('observation', 'action'), (pool.observation_space, pool.action_space),
            task.task_spaces):
        if (type(pool_space), pool_space.shape, getattr(pool_space, 'n', None)) != (
                type(space), space.shape, getattr(space, 'n', None)):
            raise ValueError(
                f"envpool's {task.id} has the {kind} space {pool_space} where Gymnasium's has "
                f'{space}; the {_OTHER_BACKENDS} backend can host it.')


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
