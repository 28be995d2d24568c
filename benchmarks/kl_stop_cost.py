r"""What does `kl_stop` cost when it never acts, and what does a stop save?

An update stopped by `kl_stop` computes no loss or gradients in the steps
after the one that crossed the bound. Three variants of each config train a
few phases, each run in a process of its own, alternating:
  none         no `kl_stop` (the shipped configs);
  never        `kl_stop=1e9`: the bound is checked at every step and never
               crossed, so every step computes and applies its gradients;
  second_step  `kl_stop=1e-9`: every update's second step crosses the bound
               (the first starts at the policy that acted, with a KL of 0),
               and the rest of the update computes nothing.
Before the skip, `second_step` computed every step of an update as `never`
does, and applied only the first.

    python benchmarks/kl_stop_cost.py [--configs pendulum,cheetah]
        [--variants none,never,second_step] [--repeats 2] [--phases 4]
        [--out benchmarks/results/kl_stop_cost/kl_stop_cost.md]
"""

import json
import os
import time

import phase_timing

VARIANTS = {'none': {}, 'never': dict(kl_stop=1e9), 'second_step': dict(kl_stop=1e-9)}


def main():
    """Run the benchmark as the command line asks and print its table."""
    parser = phase_timing.parser(
        __doc__.split('\n')[0], 'pendulum,cheetah', ','.join(VARIANTS), phases=4)
    args = parser.parse_args()
    if args.child:
        name, variant, phases = args.child.split(',')
        print(json.dumps(phase_timing.train_phases(name, int(phases), **VARIANTS[variant])))
        return
    configs, variants = args.configs.split(','), args.variants.split(',')
    unknown = set(variants) - set(VARIANTS) or set(configs) - set(phase_timing.PHASE_STEPS)
    if unknown:
        parser.error(f'unknown variants or configs {sorted(unknown)}; variants are '
                     f'{", ".join(VARIANTS)}; configs {", ".join(phase_timing.PHASE_STEPS)}.')
    started, load_before = time.time(), os.getloadavg()[0]
    results = phase_timing.measure(__file__, configs, variants, args.repeats, args.phases)
    baseline = 'none' if 'none' in variants else variants[0]
    text = phase_timing.report(
        f'python benchmarks/kl_stop_cost.py --configs {args.configs} --variants '
        f'{args.variants} --repeats {args.repeats} --phases {args.phases}',
        started, load_before,
        phase_timing.table(results, variants, args.phases, baseline, 'kl_stop'), configs)
    phase_timing.publish(text, args.out)


if __name__ == '__main__':
    main()
