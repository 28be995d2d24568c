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
At commit 33697fe, whose stopped updates still computed every step, the
same script measures what the skip saves
(`benchmarks/results/kl_stop_cost/kl_stop_cost_33697fe.md`).

    python benchmarks/kl_stop_cost.py [--configs pendulum,cheetah]
        [--variants none,never,second_step] [--repeats 2] [--phases 4]
        [--out benchmarks/results/kl_stop_cost/kl_stop_cost.md]
"""

import phase_timing

VARIANTS = {'none': {}, 'never': dict(kl_stop=1e9), 'second_step': dict(kl_stop=1e-9)}


def train_once(config_name, variant, phases):
    """Train `phases` phases of a config with the variant's `kl_stop`; their seconds."""
    return phase_timing.train_phases(config_name, phases, **VARIANTS[variant])


def main():
    """Run the benchmark as the command line asks and print its table."""
    phase_timing.main(
        __file__, __doc__.split('\n')[0], 'pendulum,cheetah', list(VARIANTS), 4, train_once,
        'kl_stop')


if __name__ == '__main__':
    main()
