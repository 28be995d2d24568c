"""Combine several environments into one batched environment."""

import functools

import numpy as np

from agents.tools.envs import contract
from agents.tools.envs import errors
from agents.tools.envs import remote


class BatchEnv(contract.BaseBatchEnv):
    """Steps and resets a list of environments as one batch.

    Follows the contract of `contract.BaseBatchEnv`. The environments are
    Gymnasium environments in this process (the `inprocess` backend) or
    handles to environments hosted elsewhere, such as `ExternalProcess` or
    `RayEnvironment`. For those, a non-blocking batch first sends the action to
    every environment and only then collects the results, so the workers step
    in parallel. `batch[i]` is environment `i` itself. Errors of hosted
    environments name the environment's index and id.
    """

    takes_variable_size_spaces = True

    def __init__(self, envs, blocking):
        """Combine environments into a batch.

        Args:
          envs: List of Gymnasium-style environments with equal observation and
            action spaces.
          blocking: Step the environments one after another; set to False for
            hosted environments whose `step` and `reset` accept
            `blocking=False` and return promises.

        Raises:
          ValueError: If there are no environments or their spaces differ.
          TypeError: If a space cannot be batched.
        """
        super().__init__()
        self._envs = list(envs)
        self._own_observs = {}
        self._blocking = blocking
        self._set_spaces([(env.observation_space, env.action_space) for env in self._envs])
        self._names = [
            f'environment {index} ({errors.env_name(env)})'
            for index, env in enumerate(self._envs)]

    def __getitem__(self, index):
        """Environment `index` of the batch."""
        return self._envs[index]

    def own_observations(self, indices):
        """The observations the environments at `indices` returned from their last step."""
        if not all(index in self._own_observs for index in indices):
            return None
        return [self._own_observs[index] for index in indices]

    def _step(self, actions, indices):
        actions = self._action_layout.rows(actions)
        indices = range(len(self._envs)) if indices is None else indices
        if self._blocking:
            transitions = [
                self._envs[index].step(action) for index, action in zip(indices, actions)]
        else:
            transitions = self._resolve(indices, [
                self._guarded(index, functools.partial(
                    self._envs[index].step, action, blocking=False))
                for index, action in zip(indices, actions)])
        if not transitions:
            return (
                self._observ_layout.empty(0), np.zeros(0), np.zeros(0, bool),
                np.zeros(0, bool), ())
        observs, rewards, terminated, truncated, infos = zip(*transitions)
        self._own_observs = dict(zip(indices, observs))
        return (
            self._observ_layout.stack(observs),
            np.asarray(rewards, dtype=np.float64),
            np.asarray(terminated, dtype=bool),
            np.asarray(truncated, dtype=bool),
            tuple(infos))

    def _reset(self, indices, seeds, options):
        if self._blocking:
            results = [
                self._envs[index].reset(seed=seed, options=options)
                for index, seed in zip(indices, seeds)]
        else:
            results = self._resolve(indices, [
                self._guarded(index, functools.partial(
                    self._envs[index].reset, seed=seed, options=options, blocking=False))
                for index, seed in zip(indices, seeds)])
        observs, infos = zip(*results) if results else ((), ())
        return self._observ_layout.stack(list(observs)), tuple(infos)

    def _apply(self, function, args, indices):
        promises = []
        for index in indices:
            env = self._envs[index]
            if isinstance(env, remote.RemoteEnvironment):
                promises.append(self._guarded(index, functools.partial(
                    env.apply, function, *args, blocking=False)))
            else:
                promises.append(functools.partial(function, env, *args))
        return self._resolve(indices, promises)

    def _close(self, timeout):
        for env in self._envs:
            if isinstance(env, remote.RemoteEnvironment):
                env.close(timeout)
            elif hasattr(env, 'close'):
                env.close()

    def _resolve(self, indices, promises):
        """Results of every promise; raises the first error once all are resolved.

        Args:
          indices: The batch index of the environment of each promise.
          promises: Zero-argument callables returning the results.
        """
        results, first_error = [], None
        for index, promise in zip(indices, promises):
            try:
                results.append(self._guarded(index, promise))
            except errors.WorkerDiedError:
                raise
            except Exception as error:  # Raised once the other workers answered.
                first_error = first_error or error
        if first_error is not None:
            raise first_error
        return results

    def _guarded(self, index, function):
        """Call `function` for environment `index`; a failed worker closes the batch.

        After a worker died or timed out the batch closes at once and the error
        names the environment; after Ctrl-C it closes without waiting for the
        workers, since the program is stopping.
        """
        try:
            return function()
        except errors.WorkerDiedError as error:
            hung = isinstance(error, errors.WorkerTimeoutError)
            self._shut_down(0 if hung else contract.CLOSE_TIMEOUT)
            raise type(error)(f'While waiting for {self._names[index]}: {error}') from None
        except KeyboardInterrupt:
            self._shut_down(0)
            raise
