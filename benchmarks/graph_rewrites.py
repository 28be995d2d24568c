r"""Training time under different sets of Grappler graph optimizers.

TensorFlow optimizes a graph (Grappler) at the first `session.run` of each
fetch, so the first phase of training pays for it, and the optimized graph
decides the cost of every later step. This benchmark trains the shipped
configs with each set of optimizers and reports the first training phase,
the mean of the later ones, and the whole training time (evaluations not
counted), against TensorFlow's default set measured in the same invocation.

Sets (`--variants`):
  default      TensorFlow's default optimizers (`GRAPH_OPTIMIZERS = None`).
  dependency   Dependency optimization only, in one pass: what the scripts
               run (`agents.scripts.run_api.GRAPH_OPTIMIZERS` and
               `GRAPH_OPTIMIZER_PASSES`).
  dependency2  Dependency optimization only, in TensorFlow's default two passes.
  none         No graph optimization at all.

Each run is its own process; runs alternate between the sets, so load
changes hit every set alike. Usage:

    python benchmarks/graph_rewrites.py [--configs pendulum,cartpole,cheetah]
        [--variants default,dependency,dependency2,none] [--repeats 2] [--phases 6]
        [--out benchmarks/results/graph_rewrites/graph_rewrites.md]
"""

from lib import phase_timing

# Variant -> (optimizers, passes).
VARIANTS = {
    'default': (None, 2), 'dependency': (('dependency',), 1),
    'dependency2': (('dependency',), 2), 'none': ((), 1)}


def train_once(config_name, variant, phases):
    """Train `phases` phases of a config with a set of optimizers; their seconds."""
    from agents.scripts import run_api
    run_api.GRAPH_OPTIMIZERS, run_api.GRAPH_OPTIMIZER_PASSES = VARIANTS[variant]
    return phase_timing.train_phases(config_name, phases)


def main():
    """Run the benchmark as the command line asks and print its table."""
    phase_timing.main(
        __file__, __doc__.split('\n')[0], 'pendulum,cartpole,cheetah', list(VARIANTS), 6,
        train_once, 'optimizers')


if __name__ == '__main__':
    main()
