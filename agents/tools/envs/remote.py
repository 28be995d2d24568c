"""Requests to an environment hosted elsewhere, and the handle that sends them.

`RemoteEnvironment` is the interface shared by handles to environments hosted
in another process or on another machine (`process.ExternalProcess`,
`ray.RayEnvironment`): blocking and promise-returning `step` and `reset`,
`call`, `apply`, attribute forwarding. A handle sends `Request`s; the worker
hosting the environment answers each with `serve_request`.
"""

import collections
import functools

from agents.tools.envs import access
from agents.tools.envs import contract
from agents.tools.envs import errors

# Kinds of `Request`.
_ACCESS = 'access'
_CALL = 'call'
_APPLY = 'apply'


class Request(collections.namedtuple('Request', ('kind', 'name', 'args', 'kwargs'))):
    """A request to an environment hosted elsewhere, served by `serve_request`.

    Create requests with `Request.access`, `Request.call` and `Request.apply`.

    Attributes:
      kind: 'access' to read attribute `name`, 'call' to call method `name`, or
        'apply' to call the function `args[0]` with the environment and the
        other arguments.
      name: Attribute or method name, looked up through Gymnasium wrappers;
        dotted names read attributes of attributes ('unwrapped.spec'). The
        function's name for 'apply'.
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

    @classmethod
    def apply(cls, function, /, *args):
        """Request to call `function(env, *args)` where the environment runs.

        The function travels by reference (pickle) to process workers: use a
        function defined at the top level of a module, such as those of `access`.
        """
        return cls(_APPLY, function.__name__, (function,) + args, {})

    def calls(self, method):
        """Whether the request calls the method named `method`."""
        return self.kind == _CALL and self.name == method

    @property
    def description(self):
        """What the request does, for error messages."""
        if self.kind == _ACCESS:
            return f'reading attribute {self.name!r}'
        if self.kind == _APPLY:
            return f'running {self.name}() on the environment'
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
        if request.kind == _APPLY:
            function, *args = request.args
            return function(env, *args), None
        value = access.get_attribute(env, request.name)
        if request.kind == _CALL:
            return value(*request.args, **request.kwargs), None
        if request.kind == _ACCESS:
            return (_RemoteCallable() if callable(value) else value), None
        raise ValueError(f'Unknown request kind {request.kind!r}.')
    except Exception as error:  # pylint: disable=broad-except
        return None, errors.describe_exception(error)


class _RemoteCallable:
    """Marks an attribute of the remote environment that is called, not copied."""


class RemoteEnvironment:
    """An environment hosted elsewhere: in a worker process, a Ray actor, ...

    Implements the interface of a hosted environment over `Request`s: blocking
    and promise-returning `step`, `reset` and `apply`, `call`, `access`, attribute
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
        except errors.WorkerError as error:
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

    def apply(self, function, /, *args, blocking=True):
        """Call `function(env, *args)` where the environment runs.

        Args:
          function: Function of the environment and the arguments, defined at
            the top level of a module (it is sent by reference).
          *args: Further arguments of the function.
          blocking: Wait for the result; otherwise return a promise.

        Returns:
          A copy of the function's result; or, if not blocking, a zero-argument
          callable returning it.
        """
        promise = self._submit(Request.apply(function, *args), blocking)
        return promise() if blocking else promise

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

    def close(self, timeout=contract.CLOSE_TIMEOUT):
        """Close the environment and free its host; does nothing the second time.

        Args:
          timeout: Seconds the host gets to close the environment before it is
            stopped.
        """
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
