"""Environment wrappers and a process to run an environment in.

`ExternalProcess` runs one environment in a worker process, so many
environments can step in parallel, free of the GIL. It is a
`RemoteEnvironment`, the interface shared by handles to environments hosted
elsewhere (`ray_env.RayEnvironment` is another); `Request` and
`serve_request` are what their workers share. The wrappers adapt Gymnasium
environments for batched training: they limit episode length, normalize
ranges, convert dtypes to 32 bits, repeat actions, stack frames, and adapt
environments written for the old Gym API. All wrappers are `gymnasium.Wrapper`
subclasses (except `GymToGymnasium`, which wraps objects that are not
Gymnasium environments) and can be stacked in any order.

This module is pure Python: it does not import TensorFlow.
"""

import atexit
import collections
import copy
import functools
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import traceback
import weakref

import cloudpickle
import gymnasium
import numpy as np


class WorkerError(RuntimeError):
    """An exception raised by the environment inside an `ExternalProcess` worker.

    The message names the exception type and message and ends with the
    traceback text of the worker, so the failing line of the environment is
    visible in the parent process.

    Attributes:
      exception_type: Name of the exception class raised in the worker, for
        example 'ValueError' or 'gymnasium.error.ResetNeeded'.
      remote_traceback: The formatted traceback of the exception in the worker.
      traceback_heading: Class attribute, introduces the traceback in the
        message; subclasses for other hosts name theirs.
    """

    traceback_heading = 'Worker traceback'

    def __init__(self, message, exception_type=None, remote_traceback=None):
        super().__init__(message)
        self.exception_type = exception_type
        self.remote_traceback = remote_traceback

    @classmethod
    def from_failure(cls, failure, origin):
        """Create the error for a failure reported by a worker.

        Args:
          failure: Triple of exception type name, message and traceback text,
            as returned by `describe_exception`.
          origin: Where and when the exception was raised, for the message.

        Returns:
          The error, its message naming the exception, the origin and the traceback.
        """
        exception_type, message, remote_traceback = failure
        return cls(
            f'{exception_type}: {message}\n({origin})\n{cls.traceback_heading}:\n'
            f'{remote_traceback}', exception_type, remote_traceback)


class WorkerDiedError(RuntimeError):
    """The worker process of an `ExternalProcess` exited without being closed."""


# Kinds of `Request`.
_ACCESS = 'access'
_CALL = 'call'
# Sent to an `ExternalProcess` worker instead of a request to end it; has no response.
_CLOSE = 'close'

_CLOSE_TIMEOUT_SECONDS = 5.0

# Processes not closed yet; weak, so only their owners keep them alive.
_OPEN_PROCESSES = weakref.WeakSet()


@atexit.register
def _close_open_processes():
    """Close the workers that are still running when the interpreter exits."""
    for process in list(_OPEN_PROCESSES):
        # A forked copy of the owner must leave the owner's workers alone.
        if process._owner_pid == os.getpid():
            process.close()


class Request(collections.namedtuple('Request', ('kind', 'name', 'args', 'kwargs'))):
    """A request to an environment hosted elsewhere, served by `serve_request`.

    Create requests with `Request.access` and `Request.call`.

    Attributes:
      kind: 'access' to read attribute `name`, or 'call' to call method `name`.
      name: Attribute or method name; looked up through Gymnasium wrappers.
      args: Tuple of positional arguments of a call.
      kwargs: Dict of keyword arguments of a call.
    """

    __slots__ = ()

    @classmethod
    def access(cls, name):
        """Request to read attribute `name` of the environment."""
        return cls(_ACCESS, name, (), {})

    @classmethod
    def call(cls, name, /, *args, **kwargs):
        """Request to call method `name` of the environment with the arguments."""
        return cls(_CALL, name, args, kwargs)

    def calls(self, method):
        """Whether the request calls the method named `method`."""
        return self.kind == _CALL and self.name == method

    @property
    def description(self):
        """What the request does, for error messages."""
        if self.kind == _ACCESS:
            return f'reading attribute {self.name!r}'
        return f'calling {self.name}()'


def serve_request(env, request):
    """Serve a `Request` on the side of the worker that hosts the environment.

    Args:
      env: The environment.
      request: The `Request`.

    Returns:
      The outcome, a pair (value, failure). On success, value is the result and
      failure is None; a callable attribute is read as a marker that
      `RemoteEnvironment.access` turns into a function calling it remotely. If
      the environment raised, value is None and failure is the
      `describe_exception` triple of the exception.
    """
    try:
        value = _lookup_attribute(env, request.name)
        if request.kind == _CALL:
            return value(*request.args, **request.kwargs), None
        if request.kind == _ACCESS:
            return (_RemoteCallable() if callable(value) else value), None
        raise ValueError(f'Unknown request kind {request.kind!r}.')
    except Exception as error:  # pylint: disable=broad-except
        return None, describe_exception(error)


def describe_exception(error):
    """Describe an exception so it can be sent from a worker and raised again.

    Args:
      error: The exception, caught in the worker.

    Returns:
      Triple of the exception type name (qualified by its module unless it is a
      builtin), the message, and the formatted traceback text.
    """
    exception_type = type(error).__qualname__
    module = type(error).__module__
    if module != 'builtins':
        exception_type = f'{module}.{exception_type}'
    remote_traceback = ''.join(
        traceback.format_exception(type(error), error, error.__traceback__))
    return exception_type, str(error), remote_traceback


def _lookup_attribute(env, name):
    """Look up an attribute, through Gymnasium wrappers if it is one."""
    if hasattr(env, 'get_wrapper_attr'):
        return env.get_wrapper_attr(name)
    return getattr(env, name)


class _RemoteCallable:
    """Marks an attribute of the remote environment that is called, not copied."""


class RemoteEnvironment:
    """An environment hosted elsewhere: in a worker process, a Ray actor, ...

    Implements the interface of a hosted environment over `Request`s: blocking
    and promise-returning `step` and `reset`, `call`, `access`, attribute
    forwarding with cached spaces, and use as a context manager. A subclass
    provides the transport by implementing `_submit` and `close`; its worker
    answers each request with `serve_request`.
    """

    def __init__(self):
        self._observation_space = None
        self._action_space = None

    @property
    def observation_space(self):
        """Observation space of the environment, fetched once."""
        if self._observation_space is None:
            self._observation_space = self.access('observation_space')
        return self._observation_space

    @property
    def action_space(self):
        """Action space of the environment, fetched once."""
        if self._action_space is None:
            self._action_space = self.access('action_space')
        return self._action_space

    def __getattr__(self, name):
        """Forward access to public attributes to the environment.

        Args:
          name: Attribute name.

        Returns:
          The value of the attribute, or a function calling it remotely if it is
          callable.
        """
        if name.startswith('_'):
            raise AttributeError(
                f'{type(self).__name__} does not forward private attribute {name!r}.')
        return self.access(name)

    def access(self, name):
        """Read an attribute of the environment.

        Args:
          name: Attribute name; looked up through Gymnasium wrappers.

        Raises:
          AttributeError: If the environment has no such attribute.

        Returns:
          A copy of the value of the attribute, or a function calling it
          remotely if it is callable.
        """
        try:
            value = self._submit(Request.access(name), blocking=True)()
        except WorkerError as error:
            if error.exception_type == 'AttributeError':
                raise AttributeError(str(error)) from error
            raise
        if isinstance(value, _RemoteCallable):
            return functools.partial(self.call, name)
        return value

    def call(self, name, /, *args, **kwargs):
        """Call a method of the environment and wait for its result.

        Args:
          name: Method name; looked up through Gymnasium wrappers.
          *args: Positional arguments of the method.
          **kwargs: Keyword arguments of the method.

        Returns:
          A copy of the return value.
        """
        return self._submit(Request.call(name, *args, **kwargs), blocking=True)()

    def step(self, action, blocking=True):
        """Step the environment.

        Args:
          action: Action to apply; the caller may reuse its buffer once this
            returns.
          blocking: Wait for the result; otherwise return a promise.

        Returns:
          Tuple of observation, reward, terminated flag, truncated flag and info
          dict; or, if not blocking, a zero-argument callable returning it.
        """
        promise = self._submit(Request.call('step', action), blocking)
        return promise() if blocking else promise

    def reset(self, seed=None, options=None, blocking=True):
        """Reset the environment.

        Args:
          seed: Optional seed for the environment's random number generator.
          options: Optional dict of reset options of the environment.
          blocking: Wait for the result; otherwise return a promise.

        Returns:
          Tuple of the first observation and the info dict; or, if not blocking,
          a zero-argument callable returning it.
        """
        promise = self._submit(Request.call('reset', seed=seed, options=options), blocking)
        return promise() if blocking else promise

    def close(self):
        """Close the environment and free its host; does nothing the second time."""
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _submit(self, request, blocking):
        """Send a request to the environment.

        Args:
          request: The `Request`.
          blocking: Whether the caller resolves the promise before returning; if
            not, the caller may change the arguments of the request meanwhile.

        Raises:
          RuntimeError: If the environment is closed.

        Returns:
          A promise: a zero-argument callable that returns the value of the
          request, or raises `WorkerError` if the environment raised.
        """
        raise NotImplementedError


class ExternalProcess(RemoteEnvironment):
    """Runs one environment in a worker process and forwards calls to it.

    The constructor of the environment is sent to the worker with cloudpickle,
    so it can be any zero-argument callable: a lambda, a closure or a
    `functools.partial`. Classes it refers to must be importable in the worker.
    Attributes of the environment are forwarded (`env.observation_space`,
    `env.render()`), also through stacks of Gymnasium wrappers.

    An exception in the environment raises `WorkerError` in the parent. The
    worker keeps serving requests after that, so attributes can still be read
    and the environment reset or closed; whether the environment itself is still
    in a usable state is up to it. If the constructor raised, every request
    raises `WorkerError` with the constructor's exception. If the worker process
    dies, the pending and all later requests raise `WorkerDiedError`.

    The worker ignores SIGINT so that Ctrl-C interrupts only the parent, which
    then closes its workers. Workers still running at interpreter exit are
    closed, and a worker whose parent dies exits on its own. An instance is not
    thread-safe. As with any forkserver or spawn process, a script that creates
    workers must guard its entry point with `if __name__ == '__main__':`.
    """

    def __init__(self, constructor, start_method='forkserver'):
        """Start the worker process and construct the environment in it.

        Construction does not wait for the environment to be built, so many
        workers start in parallel; a failing constructor is reported by the
        first request.

        Args:
          constructor: Callable without arguments that returns the environment.
          start_method: Start method of `multiprocessing`. 'forkserver' and
            'spawn' are safe after TensorFlow was imported; with 'fork', a
            worker does not notice when its parent dies.

        Raises:
          TypeError: If the constructor is not callable or cannot be pickled.
        """
        super().__init__()
        if not callable(constructor):
            raise TypeError(
                f'ExternalProcess needs a callable that returns an environment, got '
                f'{constructor!r}.')
        try:
            pickled_constructor = cloudpickle.dumps(constructor)
        except Exception as error:
            raise TypeError(
                f'Cannot send the environment constructor {constructor!r} to a worker '
                f'process, cloudpickle failed: {error}') from error
        context = multiprocessing.get_context(start_method)
        self._closed = False
        self._requests_sent = 0
        self._responses_received = 0
        self._pending = {}  # Request id -> description, until resolved.
        self._responses = {}  # Request id -> response received before asked for.
        self._connection, worker_connection = context.Pipe()
        self._process = context.Process(
            target=_worker, args=(pickled_constructor, worker_connection),
            name='ExternalProcess worker')
        self._process.start()
        self._pid = self._process.pid
        self._owner_pid = os.getpid()
        # The worker owns its end now; closing ours lets it see EOF when we die.
        worker_connection.close()
        _OPEN_PROCESSES.add(self)

    @property
    def pid(self):
        """Process id of the worker."""
        return self._pid

    def close(self, timeout=_CLOSE_TIMEOUT_SECONDS):
        """Close the environment and end the worker; does nothing the second time.

        Unresolved promises are abandoned. A worker that does not exit within the
        timeout is terminated, and killed if it ignores that.

        Args:
          timeout: Seconds to wait for the worker to close the environment.
        """
        if self._closed:
            return
        self._closed = True
        _OPEN_PROCESSES.discard(self)
        try:
            self._connection.send_bytes(pickle.dumps(_CLOSE))
        except OSError:
            pass  # The worker is already gone.
        # Closing our end also unblocks a worker stuck sending unread responses.
        self._connection.close()
        self._process.join(timeout)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(1)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._process.close()

    def _submit(self, request, blocking):
        """Send a request to the worker and return a promise for its response."""
        del blocking  # The request is pickled at once, so the caller may change it.
        description = request.description
        if self._closed:
            raise RuntimeError(f'Cannot {description}: the ExternalProcess is closed.')
        message = pickle.dumps(request, pickle.HIGHEST_PROTOCOL)
        try:
            self._connection.send_bytes(message)
        except OSError as error:
            raise self._died_error(description) from error
        request_id = self._requests_sent
        self._requests_sent += 1
        self._pending[request_id] = description
        return functools.partial(self._receive, request_id)

    def _receive(self, request_id):
        """Wait for the response to a request; earlier responses are kept for later."""
        if request_id not in self._pending:
            raise RuntimeError('This promise was already resolved; call each promise once.')
        if self._closed:
            raise RuntimeError(
                f'Cannot finish {self._pending[request_id]}: the ExternalProcess is closed.')
        while request_id not in self._responses:
            earliest_description = self._pending[self._responses_received]
            response = self._read_response(earliest_description)
            self._responses[self._responses_received] = response
            self._responses_received += 1
        description = self._pending.pop(request_id)
        value, failure = self._responses.pop(request_id)
        if failure is not None:
            raise WorkerError.from_failure(
                failure, f'raised in the environment worker process {self.pid} while {description}')
        return value

    def _read_response(self, description):
        """Read the next response, or raise if the worker died first."""
        ready = multiprocessing.connection.wait([self._connection, self._process.sentinel])
        # Check the pipe first: a worker may send its response and then exit.
        if self._connection in ready:
            try:
                return pickle.loads(self._connection.recv_bytes())
            except (EOFError, OSError):
                pass
        raise self._died_error(description)

    def _died_error(self, description):
        """Describe a dead worker, waiting briefly for its exit code."""
        self._process.join(1)
        exit_code = self._process.exitcode
        if exit_code is None:
            reason = 'closed its connection'
        elif exit_code < 0:
            reason = f'was killed by signal {signal.Signals(-exit_code).name}'
        else:
            reason = f'exited with code {exit_code}'
        return WorkerDiedError(
            f'The environment worker process {self.pid} {reason} while {description}. '
            f'Check the environment for crashes (segfault, os._exit, out of memory); its '
            f'stderr may show more.')


def _worker(pickled_constructor, connection):
    """Build the environment and serve requests until closed or orphaned.

    Args:
      pickled_constructor: Environment constructor pickled with cloudpickle.
      connection: The worker's end of the pipe to the parent.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    env = None
    try:
        env = cloudpickle.loads(pickled_constructor)()
    except Exception as error:
        exception_type, message, remote_traceback = describe_exception(error)
        message += ' (raised by the environment constructor, so every request fails)'
        construction_failure = pickle.dumps((None, (exception_type, message, remote_traceback)))
    else:
        construction_failure = None
    try:
        while True:
            try:
                request = pickle.loads(connection.recv_bytes())
            except (EOFError, OSError):
                break  # The parent is gone.
            if request == _CLOSE:
                break
            if construction_failure:
                response = construction_failure
            else:
                response = _pickled_outcome(env, request)
            try:
                connection.send_bytes(response)
            except OSError:
                break  # The parent is gone.
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                traceback.print_exc()
        connection.close()


def _pickled_outcome(env, request):
    """Serve one request and pickle its outcome; failing to pickle fails the request."""
    outcome = serve_request(env, request)
    try:
        return pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        return pickle.dumps((None, describe_exception(error)))


class LimitDuration(gymnasium.Wrapper):
    """Truncates episodes after a number of steps.

    Stepping before the first reset or after the end of an episode raises, so
    a missing reset is noticed instead of silently continuing a finished
    episode.
    """

    def __init__(self, env, duration):
        """Limit the episodes of an environment.

        Args:
          env: Environment to wrap.
          duration: Number of steps after which `truncated` is set.

        Raises:
          ValueError: If the duration is not a positive integer.
        """
        super().__init__(env)
        self._duration = _check_count(duration, 'duration', minimum=1)
        self._step = None

    def step(self, action):
        if self._step is None:
            raise RuntimeError(
                'LimitDuration: call reset() before step(); the episode has not started '
                'yet or has already ended.')
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        if self._step >= self._duration:
            truncated = True
        if terminated or truncated:
            self._step = None
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        self._step = 0
        return self.env.reset(seed=seed, options=options)


class RangeNormalize(gymnasium.Wrapper):
    """Maps finite Box ranges of observations and actions to [-1, 1].

    The agent sees observations in [-1, 1] and acts in [-1, 1]; actions are
    mapped back to the environment's range before stepping.
    """

    def __init__(self, env, observ=None, action=None):
        """Normalize the observation and action ranges of an environment.

        Args:
          env: Environment to wrap.
          observ: True to normalize observations, False not to, None to
            normalize them only if the space is a Box with finite bounds.
          action: The same for actions.

        Raises:
          ValueError: If normalization is requested for a space that is not a
            Box with finite bounds and high > low.
        """
        super().__init__(env)
        self._observ_range = _normalizable_range(env.observation_space, observ, 'observ')
        self._action_range = _normalizable_range(env.action_space, action, 'action')
        if self._observ_range:
            self.observation_space = _unit_box(env.observation_space.shape)
        if self._action_range:
            self.action_space = _unit_box(env.action_space.shape)

    def step(self, action):
        if self._action_range:
            low, high = self._action_range
            action = low + (np.asarray(action) + 1) / 2 * (high - low)
            action = action.astype(self.env.action_space.dtype)
        observ, reward, terminated, truncated, info = self.env.step(action)
        return self._normalize_observ(observ), reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        return self._normalize_observ(observ), info

    def _normalize_observ(self, observ):
        if not self._observ_range:
            return observ
        low, high = self._observ_range
        return (2 * (observ - low) / (high - low) - 1).astype(np.float32)


class ClipAction(gymnasium.Wrapper):
    """Clips actions to the bounds of the Box action space.

    The exposed action space is unbounded, so an agent may send any action,
    for example an unclipped sample of a Gaussian policy.
    """

    def __init__(self, env):
        """Clip the actions of an environment.

        Args:
          env: Environment with a floating-point Box action space.

        Raises:
          TypeError: If the action space is not a floating-point Box.
        """
        space = env.action_space
        if not (isinstance(space, gymnasium.spaces.Box)
                and np.issubdtype(space.dtype, np.floating)):
            raise TypeError(f'ClipAction needs a floating-point Box action space, got {space}.')
        super().__init__(env)
        self.action_space = gymnasium.spaces.Box(-np.inf, np.inf, space.shape, space.dtype)

    def step(self, action):
        space = self.env.action_space
        action = np.clip(action, space.low, space.high).astype(space.dtype)
        return self.env.step(action)


class ConvertTo32Bit(gymnasium.Wrapper):
    """Converts 64-bit observations to 32 bits and rewards to float32.

    float64 becomes float32 and int64 becomes int32, in the observations and
    in the observation space, also inside Tuple and Dict observations. A
    non-finite observation or reward raises a ValueError, so that NaNs are
    caught where they appear instead of deep inside training.
    """

    def __init__(self, env):
        """Convert the observations and rewards of an environment.

        Args:
          env: Environment to wrap.
        """
        super().__init__(env)
        self.observation_space = _space_to_32_bit(env.observation_space)

    def step(self, action):
        observ, reward, terminated, truncated, info = self.env.step(action)
        if not np.isfinite(reward):
            raise ValueError(f'The environment returned a non-finite reward: {reward}.')
        return _value_to_32_bit(observ), np.float32(reward), terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        return _value_to_32_bit(observ), info


class CacheSpaces(gymnasium.Wrapper):
    """Reads the observation and action spaces once instead of on every access.

    Useful on top of environments or wrappers that compute their spaces in
    properties.
    """

    def __init__(self, env):
        """Cache the spaces of an environment.

        Args:
          env: Environment to wrap.
        """
        super().__init__(env)
        self.observation_space = env.observation_space
        self.action_space = env.action_space


class AutoReset(gymnasium.Wrapper):
    """Resets the environment on the step after an episode ended.

    That step ignores its action and returns the first observation of the new
    episode with reward 0, not terminated and not truncated, and the reset
    info. Stepping before the first reset also resets.
    """

    def __init__(self, env):
        """Reset an environment automatically.

        Args:
          env: Environment to wrap.
        """
        super().__init__(env)
        self._done = True

    def step(self, action):
        if self._done:
            observ, info = self.env.reset()
            reward, terminated, truncated = 0.0, False, False
        else:
            observ, reward, terminated, truncated, info = self.env.step(action)
        self._done = terminated or truncated
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        self._done = False
        return self.env.reset(seed=seed, options=options)


class ActionRepeat(gymnasium.Wrapper):
    """Repeats each action several times and sums the rewards.

    The repetition stops early when the episode ends.
    """

    def __init__(self, env, amount):
        """Repeat the actions of an environment.

        Args:
          env: Environment to wrap.
          amount: Number of environment steps per step of the wrapper.

        Raises:
          ValueError: If the amount is not a positive integer.
        """
        super().__init__(env)
        self._amount = _check_count(amount, 'amount', minimum=1)

    def step(self, action):
        total_reward = 0.0
        for _ in range(self._amount):
            observ, reward, terminated, truncated, info = self.env.step(action)
            total_reward += reward
            if terminated or truncated:
                break
        return observ, total_reward, terminated, truncated, info


class RandomStart(gymnasium.Wrapper):
    """Takes a random number of random actions after each reset.

    This varies the start states of deterministic environments. If the episode
    ends during these steps, the environment is reset and a new number of
    steps is drawn. A seed passed to `reset` also seeds the number of steps and
    the actions.
    """

    def __init__(self, env, max_steps):
        """Randomize the start states of an environment.

        Args:
          env: Environment to wrap.
          max_steps: Largest number of random steps after a reset; the number is
            drawn uniformly from 0 to max_steps.

        Raises:
          ValueError: If max_steps is not a non-negative integer.
        """
        super().__init__(env)
        self._max_steps = _check_count(max_steps, 'max_steps', minimum=0)
        self._random = np.random.default_rng()
        # A private copy, so seeding it does not affect other users of the space.
        self._action_sampler = copy.deepcopy(env.action_space)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._random = np.random.default_rng(seed)
            self._action_sampler.seed(seed)
        while True:
            observ, info = self.env.reset(seed=seed, options=options)
            seed = None  # Retries continue the seeded random streams.
            steps = self._random.integers(0, self._max_steps, endpoint=True)
            for _ in range(steps):
                action = self._action_sampler.sample()
                observ, _, terminated, truncated, info = self.env.step(action)
                if terminated or truncated:
                    break
            else:
                return observ, info


class FrameHistory(gymnasium.Wrapper):
    """Returns a stack of past observations as the observation.

    Before enough steps have passed, the first observation of the episode fills
    in for the missing past ones.
    """

    def __init__(self, env, past_indices, flatten):
        """Stack past observations of an environment.

        Args:
          env: Environment with a Box observation space.
          past_indices: Non-negative ints, how many steps back each frame of the
            stack is; 0 is the current observation.
          flatten: Concatenate the frames along the first observation axis
            instead of stacking them along a new first axis.

        Raises:
          TypeError: If the observation space is not a Box.
          ValueError: If past_indices is empty or has negative entries.
        """
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f'FrameHistory needs a Box observation space, got {space}.')
        past_indices = [_check_count(index, 'past_indices entry', 0) for index in past_indices]
        if not past_indices:
            raise ValueError('FrameHistory needs at least one past index, got none.')
        super().__init__(env)
        self._past_indices = np.array(past_indices)
        self._capacity = max(past_indices) + 1
        self._flatten = flatten
        self._buffer = None
        self._step = 0
        low = self._stack(np.repeat(space.low[None], len(past_indices), 0))
        high = self._stack(np.repeat(space.high[None], len(past_indices), 0))
        self.observation_space = gymnasium.spaces.Box(low, high, dtype=space.dtype)

    def step(self, action):
        if self._buffer is None:
            raise RuntimeError('FrameHistory: call reset() before step().')
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        self._buffer[self._step % self._capacity] = observ
        return self._select_frames(), reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        self._buffer = np.repeat(np.asarray(observ)[None], self._capacity, 0)
        self._step = 0
        return self._select_frames(), info

    def _select_frames(self):
        slots = (self._step - self._past_indices) % self._capacity
        return self._stack(self._buffer[slots])

    def _stack(self, frames):
        if self._flatten:
            return frames.reshape((-1,) + frames.shape[2:])
        return frames


class FrameDelta(gymnasium.Wrapper):
    """Returns the difference to the previous observation as the observation.

    As in the original BatchPPO, `reset` returns the first observation itself,
    since there is no previous one. Integer observations become floats so that
    differences can be negative. The observation space covers both the
    differences and the first observation.
    """

    def __init__(self, env):
        """Difference consecutive observations of an environment.

        Args:
          env: Environment with a Box observation space.

        Raises:
          TypeError: If the observation space is not a Box.
        """
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box):
            raise TypeError(f'FrameDelta needs a Box observation space, got {space}.')
        super().__init__(env)
        self._dtype = np.promote_types(space.dtype, np.float32)
        low, high = space.low.astype(self._dtype), space.high.astype(self._dtype)
        self.observation_space = gymnasium.spaces.Box(
            np.minimum(low - high, low), np.maximum(high - low, high), dtype=self._dtype)
        self._last = None

    def step(self, action):
        if self._last is None:
            raise RuntimeError('FrameDelta: call reset() before step().')
        observ, reward, terminated, truncated, info = self.env.step(action)
        observ = np.asarray(observ, self._dtype)
        delta = observ - self._last
        self._last = observ
        return delta, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        observ, info = self.env.reset(seed=seed, options=options)
        self._last = np.asarray(observ, self._dtype)
        return self._last.copy(), info


class GymToGymnasium(gymnasium.Env):
    """Adapts an environment written for the old Gym API to the Gymnasium API.

    The old API returns only the observation from `reset()` and a 4-tuple
    `(observ, reward, done, info)` from `step()`. A `done` with
    `info['TimeLimit.truncated']` becomes `truncated`, any other `done` becomes
    `terminated`. Old Gym spaces are converted to Gymnasium spaces, and other
    public attributes are forwarded to the wrapped environment.
    """

    def __init__(self, env, render_mode=None):
        """Adapt an old Gym environment.

        Args:
          env: Environment with the old Gym API.
          render_mode: Mode passed to the old `env.render(mode=...)`; None calls
            `env.render()` without a mode.

        Raises:
          TypeError: If a space cannot be converted to a Gymnasium space.
        """
        self.env = env
        self.observation_space = _to_gymnasium_space(env.observation_space)
        self.action_space = _to_gymnasium_space(env.action_space)
        self.metadata = getattr(env, 'metadata', {})
        self.render_mode = render_mode

    def __getattr__(self, name):
        if name.startswith('_') or name == 'env':
            raise AttributeError(f'{type(self).__name__} has no attribute {name!r}.')
        return getattr(self.env, name)

    def step(self, action):
        result = self.env.step(action)
        if len(result) != 4:
            raise ValueError(
                f'GymToGymnasium expects the old Gym API, where step() returns '
                f'(observ, reward, done, info), but got {len(result)} values; Gymnasium '
                f'environments need no adapter.')
        observ, reward, done, info = result
        truncated = bool(done) and bool(info.get('TimeLimit.truncated', False))
        terminated = bool(done) and not truncated
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        if options:
            raise ValueError(
                f'The old Gym API reset() takes no options, got {options!r}.')
        if seed is not None:
            if not callable(getattr(self.env, 'seed', None)):
                raise ValueError(
                    f'Cannot seed {self.env!r}: it has no seed() method; reset it '
                    f'without a seed.')
            self.env.seed(seed)
        super().reset(seed=seed)
        return self.env.reset(), {}

    def render(self):
        if self.render_mode is None:
            return self.env.render()
        return self.env.render(mode=self.render_mode)

    def close(self):
        if callable(getattr(self.env, 'close', None)):
            self.env.close()


def _check_count(value, name, minimum):
    """Return the value as an int, or raise if it is not an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f'{name} must be an integer >= {minimum}, got {value!r}.')
    return int(value)


def _normalizable_range(space, request, argument):
    """Return the (low, high) range to normalize, or None to leave the space as is."""
    if request not in (None, True, False):
        raise ValueError(f'{argument} must be True, False or None, got {request!r}.')
    if request is False:
        return None
    if (isinstance(space, gymnasium.spaces.Box) and np.all(np.isfinite(space.low))
            and np.all(np.isfinite(space.high)) and np.all(space.high > space.low)):
        return space.low.astype(np.float64), space.high.astype(np.float64)
    if request:
        raise ValueError(
            f'RangeNormalize cannot normalize the {argument} space {space}: it needs a Box '
            f'with finite bounds and high > low. Pass {argument}=None to normalize only '
            f'finite ranges, or {argument}=False.')
    return None


def _unit_box(shape):
    return gymnasium.spaces.Box(-1.0, 1.0, shape, np.float32)


def _space_to_32_bit(space):
    """Return the space with float64 and int64 replaced by their 32-bit types."""
    spaces = gymnasium.spaces
    if isinstance(space, spaces.Box) and space.dtype == np.float64:
        return spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32),
                          dtype=np.float32)
    if isinstance(space, spaces.Box) and space.dtype == np.int64:
        limits = np.iinfo(np.int32)
        low = np.clip(space.low, limits.min, limits.max).astype(np.int32)
        high = np.clip(space.high, limits.min, limits.max).astype(np.int32)
        return spaces.Box(low, high, dtype=np.int32)
    if isinstance(space, spaces.Discrete) and space.dtype == np.int64:
        return spaces.Discrete(int(space.n), start=int(space.start), dtype=np.int32)
    if isinstance(space, spaces.MultiDiscrete) and space.dtype == np.int64:
        return spaces.MultiDiscrete(space.nvec, dtype=np.int32, start=space.start)
    if isinstance(space, spaces.Tuple):
        return spaces.Tuple([_space_to_32_bit(inner) for inner in space.spaces])
    if isinstance(space, spaces.Dict):
        return spaces.Dict({key: _space_to_32_bit(inner) for key, inner in space.spaces.items()})
    return space


def _value_to_32_bit(value):
    """Convert float64 and int64 arrays in a possibly nested observation."""
    if isinstance(value, tuple):
        return tuple(_value_to_32_bit(inner) for inner in value)
    if isinstance(value, dict):
        return {key: _value_to_32_bit(inner) for key, inner in value.items()}
    array = np.asarray(value)
    if np.issubdtype(array.dtype, np.floating) and not np.all(np.isfinite(array)):
        raise ValueError(f'The environment returned a non-finite observation: {array}.')
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64:
        array = array.astype(np.int32)
    return array[()] if array.ndim == 0 else array


def _to_gymnasium_space(space):
    """Convert an old Gym space, recognized by its class name, to Gymnasium."""
    spaces = gymnasium.spaces
    if isinstance(space, spaces.Space):
        return space
    kind = type(space).__name__
    if kind == 'Box':
        return spaces.Box(np.asarray(space.low), np.asarray(space.high), dtype=space.dtype)
    if kind == 'Discrete':
        return spaces.Discrete(int(space.n), start=int(getattr(space, 'start', 0)))
    if kind == 'MultiDiscrete':
        return spaces.MultiDiscrete(np.asarray(space.nvec))
    if kind == 'MultiBinary':
        return spaces.MultiBinary(space.n)
    if kind == 'Tuple':
        return spaces.Tuple([_to_gymnasium_space(inner) for inner in space.spaces])
    if kind == 'Dict':
        return spaces.Dict(
            {key: _to_gymnasium_space(inner) for key, inner in space.spaces.items()})
    raise TypeError(f'GymToGymnasium cannot convert the space {space!r} to a Gymnasium space.')
