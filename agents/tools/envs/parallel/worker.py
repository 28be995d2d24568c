"""A worker process of a `ParallelBatchEnv`: its body, and the parent's handle on it."""

import os
import pickle
import signal

import cloudpickle

from agents.tools.envs import errors
from agents.tools.envs import info_columns
from agents.tools.envs import shared_arrays
from agents.tools.envs.parallel import commands as commands_lib
from agents.tools.envs.parallel import env_slice as env_slice_lib
from agents.tools.envs.parallel import protocol


class Worker:
    """Parent-side handle of one worker process: its pipes and process."""

    def __init__(
            self, context, index, constructors, start, seeds, slice_options, spin_seconds,
            countdown, commands):
        command_reader, command_writer = context.Pipe(duplex=False)
        result_reader, result_writer = context.Pipe(duplex=False)
        self.index = index
        self.start = start
        self.stop = start + len(seeds)
        self.process = context.Process(
            target=_worker_main,
            args=(
                constructors, start, seeds, slice_options, spin_seconds, command_reader,
                result_writer, countdown.worker_end(index), commands.worker_end(index)),
            name=f'ParallelBatchEnv-worker-{index}', daemon=True)
        self.process.start()
        # Without the parent's copies of the worker's ends, a dead worker shows up
        # as end-of-file on the result pipe and a dead parent as end-of-file on the
        # command pipe.
        command_reader.close()
        result_writer.close()
        self._command = command_writer
        self._result = result_reader
        self.result_fd = result_reader.fileno()
        self.sentinel = self.process.sentinel
        self.description = (
            f'environment worker {index} (pid {self.process.pid}, environments '
            f'{self.start} to {self.stop - 1})')

    def send(self, command, payload=None):
        """Write a posted command (see `commands.Commands`) to the pipe; raises if it is gone."""
        try:
            protocol.write(
                self._command.fileno(), protocol.encode(command, payload, cloudpickle.dumps))
        except (BrokenPipeError, ConnectionResetError):
            raise self.died_error() from None

    def receive(self):
        """Read one reply; raises `WorkerError` for an exception in the worker."""
        try:
            kind, payload = protocol.read(self.result_fd)
        except EOFError:
            raise self.died_error() from None
        if kind == protocol.FAILURE:
            raise errors.WorkerError.from_failure(payload, f'raised in {self.description}')
        return payload

    def died_error(self):
        """The error to raise when the worker ended unexpectedly."""
        return errors.WorkerDiedError(
            f'The {self.description} {errors.describe_exit(self.process)}; the '
            f'ParallelBatchEnv is closed. Check memory use and the environment for crashes.')

    def request_close(self):
        """Ask a sleeping worker to exit; see `commands.Commands.close_workers`."""
        try:
            os.write(self._command.fileno(), protocol.CLOSE)
        except OSError:
            pass

    def join_or_kill(self, timeout):
        """Wait for the worker to exit, killing it after `timeout` seconds."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.terminate()
            self.process.join(1.0)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()
        self._command.close()
        self._result.close()
        self.process.close()


def _worker_main(
        constructors, start, seeds, slice_options, spin_seconds, command_reader, result_writer,
        countdown, commands):
    """Body of a worker process: build the environments, then serve commands."""
    # Ctrl-C reaches the whole process group; the parent decides when to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    command_fd, result_fd = command_reader.fileno(), result_writer.fileno()
    env_slice, shared = None, None
    try:
        env_slice = env_slice_lib.EnvSlice(
            [constructor() for constructor in pickle.loads(constructors)], start, seeds,
            **slice_options)
        reply = protocol.encode(protocol.RESULT, env_slice.describe())
    except Exception as error:
        reply = protocol.encode(protocol.FAILURE, errors.describe_exception(error))
    countdown.reply(result_fd, reply)
    command_wait = commands_lib.CommandWait(command_fd, spin_seconds, commands)
    try:
        while True:
            command, payload = command_wait.next()
            if command == protocol.CLOSE:
                break
            command_wait.started()
            try:
                if command == protocol.STEP:
                    reply = env_slice.step()
                elif command == protocol.STEP_SOME:
                    reply = env_slice.step(some=True)
                elif command == protocol.RESET:
                    reply = env_slice.reset(*payload)
                elif command == protocol.APPLY:
                    reply = env_slice.apply(*payload)
                elif command == protocol.ATTACH:
                    shared = shared_arrays.SharedArrays(payload[1], name=payload[0])
                    env_slice.bind(shared)
                    reply = None
                elif command == protocol.ATTACH_INFOS:
                    env_slice.bind_info_columns(info_columns.InfoColumns(*payload))
                    reply = None
                else:
                    raise ValueError(f'Unknown command {command!r}.')
                if reply is None:
                    reply = protocol.DONE
                elif reply is not protocol.INFOS_IN_COLUMNS:
                    reply = protocol.encode(protocol.RESULT, reply)
            except Exception as error:
                reply = protocol.encode(protocol.FAILURE, errors.describe_exception(error))
            # Before the reply: the parent it wakes may take this core at once.
            command_wait.finished()
            countdown.reply(result_fd, reply)
    finally:
        if env_slice is not None:
            env_slice.close()
        if shared is not None:
            shared.close()
