"""The environments one process steps, reading actions from and writing results to shared memory."""

import numpy as np

from agents.tools.envs import batching
from agents.tools.envs import errors
from agents.tools.envs.parallel import protocol


class EnvSlice:
    """Consecutive environments of the batch, stepped one after another in one process.

    Used inside the workers and for the parent's own share, so both follow the
    same rules for results, automatic resets and seeds. Reads actions from and
    writes results to its rows of the shared arrays.
    """

    def __init__(self, envs, start, seeds, auto_reset, return_infos):
        self.envs = envs
        self.start = start
        self.stop = start + len(envs)
        self._pending_seeds = list(seeds)
        self._auto_reset = auto_reset
        self._return_infos = return_infos
        self._info_columns = None

    def describe(self):
        """List of (observation space, action space, name) of the environments."""
        return [
            (env.observation_space, env.action_space,
             f'environment {self.start + offset} ({errors.env_name(env)})')
            for offset, env in enumerate(self.envs)]

    def bind(self, shared):
        """Use this slice's rows of the `SharedArrays` for actions and results."""
        self._observ_layout = batching.BatchLayout(self.envs[0].observation_space, 'observation')
        self._action_layout = batching.BatchLayout(self.envs[0].action_space, 'action')
        rows = slice(self.start, self.stop)
        self._actions = [leaf[rows] for leaf in leaf_arrays(shared, 'action')]
        self._observ = [leaf[rows] for leaf in leaf_arrays(shared, 'observ')]
        self._first_observ = [leaf[rows] for leaf in leaf_arrays(shared, 'first_observ')]
        self._reward = shared['reward'][rows]
        self._busy = shared['busy'][rows]
        self._stepping = shared['stepping'][rows]
        self._terminated = shared['terminated'][rows]
        self._truncated = shared['truncated'][rows]

    def bind_info_columns(self, columns):
        """Write step infos that fit the schema of the `InfoColumns` to them from now on."""
        self._info_columns = columns

    def step(self, some=False):
        """Step environments with their actions from shared memory.

        Args:
          some: Step only the environments marked in the shared `stepping`
            array, in the order of their indices; all if False.

        Returns:
          None if no environment returned an info; `protocol.INFOS_IN_COLUMNS` if every
          stepped environment returned an info that fitted the info columns,
          where it was written, and none was reset; else a pair of dicts from
          batch index to the step info and to the info of an automatic reset.
        """
        offsets = np.flatnonzero(self._stepping).tolist() if some else range(len(self.envs))
        infos, first_infos = {}, {}
        # Copy the actions so environments that keep them are not affected when
        # the next batch of actions is written.
        actions = self._action_layout.rows(
            self._action_layout.unflatten([leaf.copy() for leaf in self._actions]))
        busy, envs = self._busy, self.envs
        # Results are gathered in lists and written to shared memory at once,
        # which costs less than a write per environment and result.
        observs, rewards, terminals, truncations = [], [], [], []
        for offset in offsets:
            # Marks the environment the parent names if this step times out.
            busy[offset] = True
            observ, reward, is_terminal, is_truncated, info = envs[offset].step(actions[offset])
            busy[offset] = False
            observs.append(observ)
            rewards.append(reward)
            terminals.append(is_terminal)
            truncations.append(is_truncated)
            if info and self._return_infos:
                infos[self.start + offset] = info
            if self._auto_reset and (is_terminal or is_truncated):
                self._reset_one(offset, None, None, first_infos)
        if observs:
            rows = offsets if some else slice(None)
            for leaf, values in zip(self._observ, self._observ_layout.flatten_rows(observs)):
                leaf[rows] = values
            self._reward[rows] = rewards
            self._terminated[rows] = terminals
            self._truncated[rows] = truncations
        if not (infos or first_infos):
            return None
        columns = self._info_columns
        if columns is not None and not first_infos and len(infos) == len(offsets):
            batch_rows = list(infos) if some else slice(self.start, self.stop)
            if columns.write(batch_rows, infos.values()):
                return protocol.INFOS_IN_COLUMNS
        return infos, first_infos

    def reset(self, requests, options):
        """Reset environments, writing their first observations to shared memory.

        Args:
          requests: List of (batch index, seed or None) of environments in this slice.
          options: Reset options dict or None.

        Returns:
          Dict from batch index to non-empty reset info.
        """
        first_infos = {}
        for index, seed in requests:
            self._reset_one(index - self.start, seed, options, first_infos)
        return first_infos

    def apply(self, function, args, indices):
        """List of `function(env, *args)` for the environments at batch `indices`."""
        return [function(self.envs[index - self.start], *args) for index in indices]

    def close(self):
        """Close the environments and let go of the shared arrays."""
        self._actions = self._observ = self._first_observ = None
        self._reward = self._terminated = self._truncated = self._busy = None
        self._stepping = None
        if self._info_columns is not None:
            self._info_columns.close()
        for env in self.envs:
            env.close()

    def _reset_one(self, offset, seed, options, first_infos):
        # The seed given at construction applies to an environment's first reset.
        if seed is None:
            seed = self._pending_seeds[offset]
        self._pending_seeds[offset] = None
        self._busy[offset] = True
        observ, info = self.envs[offset].reset(seed=seed, options=options)
        self._busy[offset] = False
        self._write(self._first_observ, offset, observ)
        if info and self._return_infos:
            first_infos[self.start + offset] = info

    def _write(self, leaves, offset, observ):
        """Write an observation into row `offset` of the shared observation leaves."""
        for leaf, value in zip(leaves, self._observ_layout.flatten(observ)):
            leaf[offset] = value


def shared_layout(size, observ_layout, action_layout):
    """Layout of the `SharedArrays` of a batch: one array per leaf of each space."""
    layout = {}
    for name, batch_layout in (
            ('action', action_layout), ('observ', observ_layout),
            ('first_observ', observ_layout)):
        for index, space in enumerate(batch_layout.leaves):
            layout[f'{name}.{index}'] = ((size,) + space.shape, space.dtype)
    layout['reward'] = ((size,), np.float64)
    layout['terminated'] = ((size,), bool)
    layout['truncated'] = ((size,), bool)
    # Which environments a worker is stepping or resetting, to name them on a timeout.
    layout['busy'] = ((size,), bool)
    # Which environments a step of some environments steps.
    layout['stepping'] = ((size,), bool)
    return layout


def leaf_arrays(shared, name):
    """The shared arrays of the leaves of `name`, in the order of the space's leaves."""
    leaves = []
    while f'{name}.{len(leaves)}' in shared.layout:
        leaves.append(shared[f'{name}.{len(leaves)}'])
    return leaves
