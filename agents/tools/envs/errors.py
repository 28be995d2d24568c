"""Errors of environments hosted in other processes, and how workers report them."""

import signal
import traceback

import gymnasium


class WorkerError(RuntimeError):
    """An exception raised by an environment inside a worker process or actor.

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
    """A worker process or actor hosting environments ended without being closed.

    The environments it hosted are gone. A batch environment that raises this
    error has closed itself.
    """


class WorkerTimeoutError(WorkerDiedError, TimeoutError):
    """A worker did not answer a step, reset or other call within the timeout.

    The message names the environments, the worker and the call. The worker
    was stopped and the batch environment closed, as after `WorkerDiedError`,
    of which this is a kind.
    """


class WaitInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM arrived while waiting for a worker.

    Raised in the waiting thread, even when it is not the main thread (see
    `waiting`); a batch environment that raises it has closed itself. A
    `KeyboardInterrupt`, so code that cleans up after Ctrl-C does the same.
    """


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


def env_name(env):
    """Short name of an environment for messages: its Gymnasium id or its class name.

    Args:
      env: A Gymnasium environment or a handle to one hosted elsewhere.
    """
    spec = getattr(env, 'spec', None)
    if spec is not None:
        return spec.id
    if isinstance(env, gymnasium.Env):
        return type(env.unwrapped).__name__
    return env.access('unwrapped.__class__.__name__')  # A `remote.RemoteEnvironment`.


def describe_exit(process):
    """How a `multiprocessing.Process` ended, for error messages.

    Args:
      process: The process, which should have ended or be about to.

    Returns:
      A phrase such as 'was killed by signal SIGKILL' or 'exited with code 3'.
    """
    process.join(1.0)
    code = process.exitcode
    if code is None:
        return 'stopped responding'
    if code < 0:
        return f'was killed by signal {signal.Signals(-code).name}'
    return f'exited with code {code}'
