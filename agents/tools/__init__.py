"""Tools for batched reinforcement learning: environments, in-graph stepping, loops.

Environment hosting (`BatchEnv`, `ParallelBatchEnv` and the other backends of
`envs`, and `VectorEnv`, their Gymnasium adapter), the `wrappers`, `nested`,
`AttrDict` and `MockEnvironment` are pure Python: importing them does not
import TensorFlow, so code that never builds a graph, and every worker
process, stays lean. `SB3VecEnv`, the Stable-Baselines3 adapter, is loaded on
first access, with SB3. The graph tools (`InGraphBatchEnv`,
`simulate`, `Loop`, ...) import TensorFlow and are loaded on first access, all
together. Reach them through this package (`tools.simulate`); importing one of
their modules directly before that, as in `import agents.tools.simulate`, makes
the package attribute of that name the module instead of the function.
"""

import importlib

from agents.tools import envs
from agents.tools import nested
from agents.tools import wrappers
from agents.tools.attr_dict import AttrDict
from agents.tools.envs import BatchEnv
from agents.tools.envs import MockEnvironment
from agents.tools.envs import ParallelBatchEnv
from agents.tools.envs import VectorEnv

# The graph tools, each name mapped to the module that defines it.
_GRAPH_TOOLS = {
    'InGraphBatchEnv': 'agents.tools.in_graph_batch_env',
    'InGraphEnv': 'agents.tools.in_graph_env',
    'Loop': 'agents.tools.loop',
    'MockAlgorithm': 'agents.tools.mock_algorithm',
    'StreamingMean': 'agents.tools.streaming_mean',
    'count_weights': 'agents.tools.count_weights',
    'ordered_cond': 'agents.tools.ordered_cond',
    'simulate': 'agents.tools.simulate',
}

# Names loaded on first access, each on its own, mapped to their module.
_LAZY = {'SB3VecEnv': 'agents.tools.envs.sb3_vec_env'}

__all__ = [
    'AttrDict', 'BatchEnv', 'MockEnvironment', 'ParallelBatchEnv', 'VectorEnv', 'envs',
    'nested', 'wrappers', *_LAZY, *_GRAPH_TOOLS]


def __getattr__(name):
    """Load the graph tools on first access to one of them, and the other lazy names."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name not in _GRAPH_TOOLS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    # Importing a module binds its name in this package; bind the tools after.
    tools = {
        tool: getattr(importlib.import_module(module), tool)
        for tool, module in _GRAPH_TOOLS.items()}
    globals().update(tools)
    return tools[name]


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_GRAPH_TOOLS))
