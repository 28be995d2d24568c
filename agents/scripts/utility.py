"""The original BatchPPO's `agents.scripts.utility` names, served by the run API.

Programs written for the original import these from here; the commands, the
benchmarks and new code use `agents.scripts.run_api`, which documents them
with the rest of what a run needs.
"""

from agents.scripts.run_api import define_batch_env
from agents.scripts.run_api import define_simulation_graph
from agents.scripts.run_api import initialize_variables
from agents.scripts.run_api import load_config
from agents.scripts.run_api import save_config

__all__ = [
    'define_batch_env', 'define_simulation_graph', 'initialize_variables', 'load_config',
    'save_config']
