"""The `parallel` backend: a few worker processes step the environments, sharing memory.

`ParallelBatchEnv` (in `parent`) spreads the environments over a few workers
(`worker`; by default one per core), each stepping its share (an `env_slice`)
in a tight loop. Actions and results live in shared memory, and so do most
commands and replies: the channel is `commands` one way, `countdown` the
other, with `protocol` for what crosses a pipe. docs/design/parallel.md
describes the mechanism and the measurements behind it.
"""

from agents.tools.envs.parallel.parent import ParallelBatchEnv
