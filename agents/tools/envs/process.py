"""One environment per worker process: `ExternalProcess` and the `process` backend."""

import atexit
import functools
import multiprocessing
import os
import pickle
import signal
import time
import traceback
import weakref

import cloudpickle

from agents.tools.envs import batch_env
from agents.tools.envs import contract
from agents.tools.envs import errors
from agents.tools.envs import remote
from agents.tools.envs import waiting

# Sent to an `ExternalProcess` worker instead of a request to end it; has no response.
_CLOSE = 'close'

# Processes not closed yet; weak, so only their owners keep them alive.
_OPEN_PROCESSES = weakref.WeakSet()


@atexit.register
def _close_open_processes():
    """Close the workers that are still running when the interpreter exits."""
    for process in list(_OPEN_PROCESSES):
        # A forked copy of the owner must leave the owner's workers alone.
        if process._owner_pid == os.getpid():
            process.close()


class ExternalProcess(remote.RemoteEnvironment):
    """Runs one environment in a worker process and forwards calls to it.

    The constructor of the environment is sent to the worker with cloudpickle,
    so it can be any zero-argument callable: a lambda, a closure or a
    `functools.partial`. Classes it refers to must be importable in the worker.
    Attributes of the environment are forwarded (`env.observation_space`,
    `env.render()`), also through stacks of Gymnasium wrappers.

    An exception in the environment raises `errors.WorkerError` in the parent. The
    worker keeps serving requests after that, so attributes can still be read
    and the environment reset or closed; whether the environment itself is still
    in a usable state is up to it. If the constructor raised, every request
    raises `WorkerError` with the constructor's exception. If the worker process
    dies, the pending and all later requests raise `errors.WorkerDiedError`. A
    worker that does not answer within the timeout is stopped, and the request
    raises `errors.WorkerTimeoutError`. Ctrl-C or SIGTERM while waiting for an
    answer, in any thread, raises `errors.WaitInterrupted` (see `waiting`).

    The worker ignores SIGINT so that Ctrl-C interrupts only the parent, which
    then closes its workers. Workers still running at interpreter exit are
    closed, and a worker whose parent dies exits on its own. An instance is not
    thread-safe. As with any forkserver or spawn process, a script that creates
    workers must guard its entry point with `if __name__ == '__main__':`.
    """

    def __init__(
            self, constructor, start_method='forkserver', timeout=contract.DEFAULT_TIMEOUT):
        """Start the worker process and construct the environment in it.

        Construction does not wait for the environment to be built, so many
        workers start in parallel; a failing constructor is reported by the
        first request.

        Args:
          constructor: Callable without arguments that returns the environment.
          start_method: Start method of `multiprocessing`. 'forkserver' and
            'spawn' are safe after TensorFlow was imported; with 'fork', a
            worker does not notice when its parent dies.
          timeout: Seconds to wait for the answer to a request before stopping
            the worker; None waits for ever. The first answer, which waits for
            the environment to be built, may take `contract.STARTUP_TIMEOUT`.

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
        waiting.watch_signals()
        self._timeout = timeout
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
        self._waiter = waiting.Waiter([self._connection.fileno(), self._process.sentinel])
        _OPEN_PROCESSES.add(self)

    @property
    def pid(self):
        """Process id of the worker."""
        return self._pid

    def close(self, timeout=contract.CLOSE_TIMEOUT):
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
            raise errors.WorkerError.from_failure(
                failure, f'raised in the environment worker process {self.pid} while {description}')
        return value

    def _read_response(self, description):
        """Read the next response, or raise if the worker died or timed out first."""
        timeout, waited_for = self._timeout, description
        if not self._responses_received:  # The worker builds the environment first.
            timeout = contract.startup_timeout(timeout)
            waited_for = f'building the environment and {description}'
        deadline = None if timeout is None else time.monotonic() + timeout
        ready = self._waiter.wait(
            deadline, f'the environment worker process {self.pid} {waited_for}')
        if not ready:
            self.close(timeout=0)
            raise errors.WorkerTimeoutError(
                f'The environment worker process {self.pid} did not answer within '
                f'{timeout} s while {waited_for}; it was stopped. If the environment '
                f'is only slow, raise the timeout.')
        # Check the pipe first: a worker may send its response and then exit.
        if self._connection.fileno() in ready:
            try:
                return pickle.loads(self._connection.recv_bytes())
            except (EOFError, OSError):
                pass
        raise self._died_error(description)

    def _died_error(self, description):
        """Describe a dead worker, waiting briefly for its exit code."""
        return errors.WorkerDiedError(
            f'The environment worker process {self.pid} {errors.describe_exit(self._process)} '
            f'while {description}. Check the environment for crashes (segfault, os._exit, '
            f'out of memory); its stderr may show more.')


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
        exception_type, message, remote_traceback = errors.describe_exception(error)
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
    outcome = remote.serve_request(env, request)
    try:
        return pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        return pickle.dumps((None, errors.describe_exception(error)))


class ProcessBatchEnv(batch_env.BatchEnv):
    """The `process` backend: a `BatchEnv` of one `ExternalProcess` per environment.

    Follows the contract of `contract.BaseBatchEnv`. Each step sends every
    worker its action before collecting any result, so the workers step in
    parallel; this pays a pipe round trip of pickled arrays per environment
    and step, which suits environments that take milliseconds per step.
    """

    def __init__(
            self, constructors, start_method='forkserver', timeout=contract.DEFAULT_TIMEOUT):
        """Start one worker process per environment.

        Args:
          constructors: Zero-argument callables, one per environment, each
            returning a Gymnasium environment.
          start_method: Start method of the workers, see `ExternalProcess`.
          timeout: Seconds to wait for a worker's answer, see `ExternalProcess`.

        Raises:
          ValueError: If there are no constructors or the spaces differ.
          TypeError: If a constructor is not callable or cannot be pickled.
          WorkerError: If a constructor raised inside its worker.
        """
        constructors = contract.check_constructors(constructors, 'ProcessBatchEnv')
        envs = []
        try:
            for constructor in constructors:
                envs.append(ExternalProcess(constructor, start_method, timeout))
            super().__init__(envs, blocking=False)
        except BaseException:
            for env in envs:
                env.close(timeout=0)
            raise
