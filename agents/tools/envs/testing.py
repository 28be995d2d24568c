"""Environments of known behaviour and process checks, for the hosting tests.

The environments live in a module, not in a test file, so worker processes
import them by reference.
"""

import functools
from multiprocessing import forkserver
from multiprocessing import resource_tracker
import os
import select
import time

import gymnasium
import numpy as np

# The repository's root, for scripts run in a fresh interpreter.
REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


# The backends, and variants of them, that tests of code built on any backend
# run on: variant name -> (backend name, options).
BACKEND_VARIANTS = {
    'inprocess': ('inprocess', {}),
    'process': ('process', {}),
    'parallel': ('parallel', {}),
    # Workers that poll for every command before sleeping (see parallel.commands.CommandWait).
    'parallel, polling workers': (
        'parallel', {'num_workers': 2, 'step_in_parent': False, 'spin_seconds': 0.1}),
    'ray': ('ray', {'envs_per_actor': 2, 'num_cpus_per_actor': 0.5}),
}


# Tasks with short time limits, so that episodes end by truncation as well as
# by termination (except Pendulum's) within a few dozen random steps.
SHORT_TASKS = {
    'CartPole-v1': functools.partial(gymnasium.make, 'CartPole-v1', max_episode_steps=15),
    'Pendulum-v1': functools.partial(gymnasium.make, 'Pendulum-v1', max_episode_steps=9),
    'Hopper-v5': functools.partial(gymnasium.make, 'Hopper-v5', max_episode_steps=25),
}


def counting_envs(size=3):
    """Constructors of `CountingEnv`s whose episodes end at different steps."""
    return [functools.partial(CountingEnv, length=3 + index) for index in range(size)]


def counting_in_time_limit(length=4):
    """A `CountingEnv` in Gymnasium's `TimeLimit` wrapper, to reach it through wrappers."""
    return gymnasium.wrappers.TimeLimit(CountingEnv(length), max_episode_steps=10)


class CountingEnv(gymnasium.Env):
    """An environment whose observation is the number of steps of its episode.

    After `n` steps the observation is `n` (filled into the observation space's
    shape and dtype), the reward is `n`, and the episode terminates at
    `n == length`. Every second step returns the info `{'count': n, 'half':
    np.float32(n / 2)}`, the others an empty info, and a reset returns the info
    `{'options': options}`. It can raise or end its process at a chosen step,
    sleep in `step` and `close`, hang in `step` or `reset`, and records its actions and the
    `time.monotonic()` start and end of each step.
    """

    def __init__(
            self, length=4, observation_space=None, action_space=None, fail_at_step=None,
            step_delay=0.0, close_delay=0.0, hang_in=None, exit_at_step=None):
        """Create the environment.

        Args:
          length: Steps per episode.
          observation_space: Box or Discrete space; Box(-inf, inf, (2,), float64)
            if None.
          action_space: Any space; Discrete(3) if None.
          fail_at_step: Raise ValueError at this step of an episode, if given.
          step_delay: Seconds to sleep in every step.
          close_delay: Seconds to sleep in `close`.
          hang_in: 'step' or 'reset' to never return from that method.
          exit_at_step: End the process with exit code 3 at this step of an
            episode, as a crashing environment would, if given.
        """
        self.observation_space = observation_space or gymnasium.spaces.Box(
            -np.inf, np.inf, (2,), np.float64)
        self.action_space = action_space or gymnasium.spaces.Discrete(3)
        self.length = length
        self.fail_at_step = fail_at_step
        self.step_delay = step_delay
        self.close_delay = close_delay
        self.hang_in = hang_in
        self.exit_at_step = exit_at_step
        self.count = 0
        self.resets = 0
        self.actions = []
        self.step_times = []

    def reset(self, *, seed=None, options=None):
        self._hang_if('reset')
        super().reset(seed=seed)
        self.count = 0
        self.resets += 1
        return self._observ(), {'options': options}

    def step(self, action):
        start = time.monotonic()
        self._hang_if('step')
        time.sleep(self.step_delay)
        self.step_times.append((start, time.monotonic()))
        if self.count + 1 == self.fail_at_step:
            raise ValueError(f'step {self.count + 1} failed on purpose')
        if self.count + 1 == self.exit_at_step:
            os._exit(3)
        self.actions.append(np.asarray(action))
        self.count += 1
        info = {'count': self.count, 'half': np.float32(self.count / 2)}
        return (
            self._observ(), float(self.count), self.count >= self.length, False,
            info if self.count % 2 == 0 else {})

    def scaled_count(self, factor):
        """The step count times `factor`, to test calling methods remotely."""
        return factor * self.count

    def close(self):
        time.sleep(self.close_delay)

    def _hang_if(self, method):
        while self.hang_in == method:
            time.sleep(1.0)

    def _observ(self):
        space = self.observation_space
        if isinstance(space, gymnasium.spaces.Discrete):
            return self.count
        return np.full(space.shape, self.count, space.dtype)


class SampleEnv(gymnasium.Env):
    """An environment of any observation space whose observations are samples drawn from its seed.

    Its episodes are cut off after `length` steps, and each step's info holds
    the action it got.
    """

    def __init__(self, space, length=3, as_lists=False, action_space=None):
        """Create the environment.

        Args:
          space: The observation space.
          length: Steps per episode.
          as_lists: Return observations of a Box space as nested lists of
            Python numbers, as some environments do.
          action_space: The action space; the observation space if None.
        """
        self.observation_space = space
        self.action_space = space if action_space is None else action_space
        self.length = length
        self.as_lists = as_lists
        self._count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        return self._observ(), {}

    def step(self, action):
        self._count += 1
        return self._observ(), 0.0, False, self._count >= self.length, {'action': action}

    def _observ(self):
        # Drawn from the environment's seeded generator, so equal seeds give equal values.
        self.observation_space.seed(int(self.np_random.integers(2 ** 31)))
        sample = self.observation_space.sample()
        return sample.tolist() if self.as_lists else sample


class NestedEnv(SampleEnv):
    """An environment with Dict or Tuple observations whose values follow its seed."""

    def __init__(self, kind='dict'):
        """Create the environment.

        Args:
          kind: 'dict' for a Dict observation space holding a Tuple, or 'tuple'
            for a Tuple space holding a Dict.
        """
        spaces = gymnasium.spaces
        position = spaces.Box(-10.0, 10.0, (2,), np.float32)
        goal = spaces.Discrete(5)
        image = spaces.Box(0, 255, (3, 2), np.uint8)
        if kind == 'dict':
            space = spaces.Dict({'position': position, 'sensors': spaces.Tuple((goal, image))})
        else:
            space = spaces.Tuple((position, spaces.Dict({'goal': goal})))
        super().__init__(space, length=5, action_space=spaces.Box(-1.0, 1.0, (2,), np.float32))

    def step(self, action):
        self._count += 1
        return self._observ(), float(np.sum(action)), self._count >= self.length, False, {}


class KeyedEnv(gymnasium.Env):
    """A goal-style environment whose Dict spaces list their keys out of sorted order.

    Its spaces are built from keyword arguments, as goal-conditioned tasks
    build them, so their keys keep the order given: observations hold
    'observation' (3 float64s), 'desired_goal' and 'achieved_goal' (2
    float32s each); actions hold 'move' (2 float32s), 'jump' and 'grip'
    (Discrete). After `n` steps the observation is `[n, jump, grip]`, the
    desired goal `100 + n` and the achieved goal `200 + n + move`, so every
    value shows the key it belongs under and the action it came from. The
    episode terminates at `n == length`.
    """

    def __init__(self, length=3):
        spaces = gymnasium.spaces
        self.observation_space = spaces.Dict(
            observation=spaces.Box(-np.inf, np.inf, (3,), np.float64),
            desired_goal=spaces.Box(-np.inf, np.inf, (2,), np.float32),
            achieved_goal=spaces.Box(-np.inf, np.inf, (2,), np.float32))
        self.action_space = spaces.Dict(
            move=spaces.Box(-1.0, 1.0, (2,), np.float32), jump=spaces.Discrete(4),
            grip=spaces.Discrete(2))
        self.length = length
        self.count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = int(self.np_random.integers(3))
        return self._observ(np.zeros(2, np.float32), 0, 0), {}

    def step(self, action):
        self.count += 1
        observ = self._observ(action['move'], action['jump'], action['grip'])
        return observ, float(self.count), self.count >= self.length, False, {}

    def _observ(self, move, jump, grip):
        return {
            'observation': np.array([self.count, jump, grip], np.float64),
            'desired_goal': np.full(2, 100 + self.count, np.float32),
            'achieved_goal': (200 + self.count + np.asarray(move)).astype(np.float32)}


def seeded(constructor, seed):
    """An environment of the constructor, reset with the seed (which seeds an envpool)."""
    env = constructor()
    env.reset(seed=seed)
    return env


class OwnPoolEnv(gymnasium.Env):
    """Environment `index` of an envpool backend, alone in a pool of its own, as one environment.

    The envpool backend seeds each environment with its constructor's seed, so
    a pool of one environment built from that constructor steps exactly as
    the environment does in the larger pool. Gymnasium's `SyncVectorEnv` and
    SB3's `DummyVecEnv` of these are references for the adapters on envpool,
    whose initial states differ from Gymnasium's own tasks'. envpool's
    `env_id` info is `index`, as in the larger pool.
    """

    def __init__(self, constructor, index):
        """Start the pool of one environment.

        Args:
          constructor: Zero-argument callable of a task envpool ships, seeded.
          index: The environment's index in the larger pool.
        """
        from agents.tools.envs import envpool  # pylint: disable=import-outside-toplevel
        self._batch = envpool.EnvpoolBatchEnv([constructor])
        self._index = index
        self.observation_space = self._batch.observation_space
        self.action_space = self._batch.action_space

    def reset(self, *, seed=None, options=None):
        del seed, options  # The envpool backend takes neither.
        observ, infos = self._batch.reset([0])
        return observ[0], self._info(infos[0])

    def step(self, action):
        observ, reward, terminated, truncated, infos = self._batch.step(
            np.asarray(action)[None])
        return (observ[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]),
                self._info(infos[0]))

    def close(self):
        self._batch.close()

    def _info(self, info):
        return dict(info, env_id=np.int32(self._index))


def assert_identical(actual, expected, path='value'):
    """Assert that two results are bit-identical, as far down as they nest.

    Containers must be of the same kind with the same keys or lengths, arrays
    of the same dtype and shape with the same bytes, and other values of the
    same type and equal.

    Args:
      actual: The result to check.
      expected: The reference result.
      path: Name of the value, extended as the check descends, for messages.
    """
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f'{path}: {type(actual)} is not a dict'
        assert list(actual) == list(expected), f'{path}: keys {list(actual)} != {list(expected)}'
        for key in expected:
            assert_identical(actual[key], expected[key], f'{path}[{key!r}]')
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected), f'{path}: {type(actual)} != {type(expected)}'
        assert len(actual) == len(expected), f'{path}: length {len(actual)} != {len(expected)}'
        for index, (value, reference) in enumerate(zip(actual, expected)):
            assert_identical(value, reference, f'{path}[{index}]')
    elif isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), f'{path}: {type(actual)} is not an array'
        assert (actual.dtype, actual.shape) == (expected.dtype, expected.shape), (
            f'{path}: {actual.dtype}{actual.shape} != {expected.dtype}{expected.shape}')
        if expected.dtype == object:
            for index, (value, reference) in enumerate(zip(actual.flat, expected.flat)):
                assert_identical(value, reference, f'{path}[{index}]')
        else:
            assert actual.tobytes() == expected.tobytes(), f'{path}: {actual} != {expected}'
    else:
        assert type(actual) is type(expected), f'{path}: {type(actual)} != {type(expected)}'
        both_nan = isinstance(expected, float) and np.isnan(expected) and np.isnan(actual)
        assert actual == expected or both_nan, f'{path}: {actual!r} != {expected!r}'


def is_running(pid):
    """Whether a process exists and is not a zombie."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (FileNotFoundError, ProcessLookupError):  # Gone before, or while, reading.
        return False


def wait_until_gone(pids, timeout=10):
    """Wait until none of the processes runs; return whether they all ended in time."""
    deadline = time.monotonic() + timeout
    while any(is_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(is_running(pid) for pid in pids)


def child_pids():
    """Process ids of the running children of this process.

    Leaves out multiprocessing's forkserver and resource tracker, which start on
    first use and serve later workers too.
    """
    children = None
    while children is None:
        children = _children_of_threads()
    children.discard(forkserver._forkserver._forkserver_pid)
    children.discard(resource_tracker._resource_tracker._pid)
    return {pid for pid in children if is_running(pid)}


def _children_of_threads():
    """Process ids of the children of this process's threads; None if a thread ended meanwhile.

    A thread that ends hands its children to another thread, perhaps one
    already listed, so the scan must then start over.
    """
    children = set()
    try:
        for task in os.listdir(f'/proc/{os.getpid()}/task'):
            with open(f'/proc/{os.getpid()}/task/{task}/children') as listing:
                children.update(int(pid) for pid in listing.read().split())
    except FileNotFoundError:
        return None
    return children


def new_children(before, timeout=10):
    """Children started since `before` that are still running after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while child_pids() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    return child_pids() - before


def readable(fd):
    """Whether a file descriptor has data (or its end) waiting, without waiting."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def open_fds():
    """Number of open file descriptors of this process.

    Starts multiprocessing's forkserver and resource tracker first, whose pipes
    stay open once started, so counts before and after starting workers compare.
    """
    forkserver.ensure_running()
    resource_tracker.ensure_running()
    return len(os.listdir('/proc/self/fd'))


def shared_memory_segments():
    """Paths of the shared-memory segments this process maps that still exist in /dev/shm."""
    with open('/proc/self/maps') as maps:
        paths = {line.split(None, 5)[-1].strip() for line in maps if ' /dev/shm/' in line}
    return {path for path in paths if os.path.exists(path)}
