"""Tools for batched reinforcement learning: environments, in-graph stepping, loops.

The pure-Python tools (wrappers, `BatchEnv`, `nested`, `AttrDict`,
`MockEnvironment`) import without TensorFlow, so research code that never
builds a graph can use them. The graph tools (`InGraphBatchEnv`, `simulate`,
`Loop`, ...) import TensorFlow when first accessed.
"""

import importlib
import sys
import types

from agents.tools import nested
from agents.tools import wrappers
from agents.tools.attr_dict import AttrDict
from agents.tools.batch_env import BatchEnv
from agents.tools.mock_environment import MockEnvironment
from agents.tools.parallel_batch_env import ParallelBatchEnv

# Names resolved on first access, mapped to the module that defines them; these
# modules import TensorFlow (or Ray), which pure-Python users should not pay for.
_LAZY_ATTRIBUTES = {
    'InGraphBatchEnv': 'agents.tools.in_graph_batch_env',
    'InGraphEnv': 'agents.tools.in_graph_env',
    'Loop': 'agents.tools.loop',
    'MockAlgorithm': 'agents.tools.mock_algorithm',
    'StreamingMean': 'agents.tools.streaming_mean',
    'count_weights': 'agents.tools.count_weights',
    'ordered_cond': 'agents.tools.ordered_cond',
    'simulate': 'agents.tools.simulate',
}


def __getattr__(name):
    if name not in _LAZY_ATTRIBUTES:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(_LAZY_ATTRIBUTES[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY_ATTRIBUTES))


class _ToolsPackage(types.ModuleType):
    """The package module, keeping functions that share their module's name.

    Importing the submodule `agents.tools.simulate` sets the package attribute
    `simulate` to that module, which would hide the function `simulate` from
    users of `tools.simulate(...)`; the same holds for `count_weights`.
    """

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and name in _LAZY_ATTRIBUTES:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ToolsPackage
