"""Suite-wide setup.

Triton loads before any test imports TensorFlow (see `load_order`), which
then loads as the commands load it, without the modules of Keras that
graph-mode training never uses (see `process_memory`); and
Stable-Baselines3, which makes a log folder in the system's temporary directory
for every model that learns, makes it in pytest's temporary directory instead.

Environment workers start from multiprocessing's forkserver, which loads the
hosting package and Gymnasium once: a worker then imports only the module that
defines its environment, about a third of the CPU time it took to import
everything (hundreds of workers start in the suite).
"""

import multiprocessing
import os

import pytest

from agents.tools import load_order
from agents.tools import process_memory

load_order.load_triton_before_tensorflow()
with process_memory.skipping_unused_imports():
    import tensorflow  # noqa: F401 (loaded as the commands load it)
multiprocessing.set_forkserver_preload(
    ['__main__', 'agents.tools.envs', 'agents.tools.envs.testing'])


@pytest.fixture(autouse=True, scope='session')
def sb3_log_folder(tmp_path_factory):
    """Points SB3's log folders, and those of the subprocesses tests start, at pytest's."""
    os.environ['SB3_LOGDIR'] = str(tmp_path_factory.mktemp('sb3_logs'))
