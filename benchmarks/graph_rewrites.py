r"""Training time under different sets of Grappler graph optimizers.

TensorFlow optimizes a graph (Grappler) at the first `session.run` of each
fetch, so the first phase of training pays for it, and the optimized graph
decides the cost of every later step. This benchmark trains the shipped
configs with each set of optimizers and reports the first training phase,
the mean of the later ones, and the whole training time (evaluations not
counted), against TensorFlow's default set measured in the same invocation.

Sets (`--variants`):
  default      TensorFlow's default optimizers (`GRAPH_OPTIMIZERS = None`).
  dependency   Dependency optimization only: what the scripts run
               (`agents.scripts.utility.GRAPH_OPTIMIZERS`).
  none         No graph optimization at all.

Each run is its own process; runs alternate between the sets, so load
changes hit every set alike. Usage:

    python benchmarks/graph_rewrites.py [--configs pendulum,cartpole,cheetah]
        [--variants default,dependency,none] [--repeats 2] [--phases 6]
        [--out benchmarks/results/graph_rewrites/graph_rewrites.md]
"""

import json
import os
import time

import phase_timing

VARIANTS = {'default': None, 'dependency': ('dependency',), 'none': ()}


def train_once(config_name, variant, phases):
    """Train `phases` phases of a config with a set of optimizers; their seconds."""
    from agents.scripts import utility
    utility.GRAPH_OPTIMIZERS = VARIANTS[variant]
    return phase_timing.train_phases(config_name, phases)


def main():
    """Run the benchmark as the command line asks and print its table."""
    parser = phase_timing.parser(
        __doc__.split('\n')[0], 'pendulum,cartpole,cheetah', ','.join(VARIANTS), phases=6)
    args = parser.parse_args()
    if args.child:
        config_name, variant, phases = args.child.split(',')
        print(json.dumps(train_once(config_name, variant, int(phases))))
        return
    configs, variants = args.configs.split(','), args.variants.split(',')
    unknown = set(variants) - set(VARIANTS) or set(configs) - set(phase_timing.PHASE_STEPS)
    if unknown:
        parser.error(f'unknown configs or variants {sorted(unknown)}; variants are '
                     f'{", ".join(VARIANTS)}, configs {", ".join(phase_timing.PHASE_STEPS)}.')
    started, load_before = time.time(), os.getloadavg()[0]
    results = phase_timing.measure(__file__, configs, variants, args.repeats, args.phases)
    text = phase_timing.report(
        f'python benchmarks/graph_rewrites.py --configs {args.configs} --variants '
        f'{args.variants} --repeats {args.repeats} --phases {args.phases}',
        started, load_before,
        phase_timing.table(results, variants, args.phases, 'default', 'optimizers'), configs)
    phase_timing.publish(text, args.out)


if __name__ == '__main__':
    main()
