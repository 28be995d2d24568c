"""The `parallel` backend: a few worker processes step the environments, sharing memory.

`ParallelBatchEnv` spreads the environments over a few workers (by default one
per core), each stepping its share in a tight loop; actions, results and most
commands and replies travel through shared memory, not pipes. The parent
(`parent`) talks to its workers (`worker`) through the channel: `protocol`,
`commands` and `countdown`. docs/design/parallel.md describes the mechanism and
the measurements behind it.
"""

from agents.tools.envs.parallel.commands import DEFAULT_SPIN_SECONDS
from agents.tools.envs.parallel.parent import ParallelBatchEnv
