r"""What a PPO gradient step costs, and which way of running it is fastest.

PPO trains in a loop of gradient steps inside conditionals that run as
function calls (`tools.ordered_cond(..., as_function=True)`). Inline in that
loop, a gradient step of two 256-unit networks measured 1.5 times as slow
as the same step in a function call of its own (`tf.function`), and with
TensorFlow's oneDNN kernels off (`TF_ENABLE_ONEDNN_OPTS=0`) both ran at the
slow speed: the fast kernels reach a function call's graph, which goes
through TensorFlow's whole graph pipeline, and not the bodies that the loop
and conditional kernels run. So by default (`gradient_graph='function'`)
PPO computes each step's loss and gradients in a function call of its own
(`PPO._loss_and_gradients`). Grappler's function optimizer would inline that
call again; the scripts' session config
(`run_api.session_config()`, which both parts use) runs only the dependency
optimizer.

Two parts (`--parts`):
  mechanism  A gradient step of two 256-256 ReLU networks (17 inputs, batch
             64, Adam), 2,000 of them in a loop inside a function-call
             conditional as in PPO: inline in the loop or as a function call,
             each with oneDNN on and off (`TF_ENABLE_ONEDNN_OPTS=0`).
             Milliseconds per step.
  ppo        Training phases of the shipped configs with each value of the
             `gradient_graph` key: `function` (the default), `inline`, `xla`
             and `xla_update` (the whole update compiled, with TensorFlow's
             default XLA emitters), `xla_update_classic` (the same with XLA's
             classic emitters, as the command line scripts compile it), and
             `eigen`: a function call with oneDNN off.

Every run is its own process, and runs alternate between the variants.
Usage:

    python benchmarks/update_step.py [--parts mechanism,ppo]
        [--configs pendulum,cartpole,cheetah]
        [--variants function,inline,xla,xla_update,xla_update_classic,eigen]
        [--repeats 2] [--phases 4] [--out
        benchmarks/results/update_step/update_step.md]
"""

import json
import os
import time

from lib import phase_timing
import numpy as np

PPO_VARIANTS = {
    'function': (dict(gradient_graph='function'), {}),
    'inline': (dict(gradient_graph='inline'), {}),
    'xla': (dict(gradient_graph='xla'), {}),
    'xla_update': (dict(gradient_graph='xla_update'), {}),
    'eigen': (dict(gradient_graph='function'), dict(TF_ENABLE_ONEDNN_OPTS='0')),
    'xla_update_classic': (
        dict(gradient_graph='xla_update'), dict(XLA_FLAGS='--xla_cpu_use_fusion_emitters=false')),
}
MECHANISM_VARIANTS = ('inline', 'function')
KERNELS = {'oneDNN': {}, 'Eigen': dict(TF_ENABLE_ONEDNN_OPTS='0')}
MECHANISM_STEPS = 2000


def time_mechanism(variant, steps=MECHANISM_STEPS, repeats=3):
    """Milliseconds per gradient step of two 256-256 networks, the best of `repeats` loops."""
    import tensorflow as tf

    from agents import tools
    from agents.scripts import run_api
    tf.compat.v1.disable_eager_execution()
    random = np.random.default_rng(0)
    inputs = tf.constant(random.normal(size=(512, 17)), tf.float32)
    targets = tf.constant(random.normal(size=(512, 7)), tf.float32)

    def network(observ, outputs, name):
        with tf.compat.v1.variable_scope(name, reuse=tf.compat.v1.AUTO_REUSE):
            hidden = observ
            for index in range(2):
                hidden = tf.nn.relu(tf.matmul(
                    hidden, tf.compat.v1.get_variable(f'weight{index}', [hidden.shape[-1], 256]))
                    + tf.compat.v1.get_variable(f'bias{index}', [256]))
            return tf.matmul(hidden, tf.compat.v1.get_variable('output', [256, outputs]))

    def loss_and_gradients(observ, target):
        loss = (tf.reduce_mean(tf.square(network(observ, 6, 'policy') - target[:, :6])) +
                tf.reduce_mean(tf.square(network(observ, 1, 'value') - target[:, 6:])))
        gradients, _ = tf.clip_by_global_norm(tf.gradients(loss, variables), 0.5)
        return loss, gradients

    network(inputs, 6, 'policy')
    network(inputs, 1, 'value')
    variables = tf.compat.v1.trainable_variables()
    optimizer = tf.compat.v1.train.AdamOptimizer(1e-4)
    if variant == 'function':
        loss_and_gradients = tf.function(loss_and_gradients, autograph=False)

    def gradient_step(index, total):
        batch = tf.random.uniform([64], 0, 512, tf.int32)
        loss, gradients = loss_and_gradients(tf.gather(inputs, batch), tf.gather(targets, batch))
        with tf.control_dependencies([optimizer.apply_gradients(zip(gradients, variables))]):
            return index + 1, total + loss

    def train():
        return tf.while_loop(
            lambda index, _: index < steps, gradient_step, (0, 0.0), parallel_iterations=1)[1]

    loop = tools.ordered_cond(tf.constant(True), train, lambda: 0.0, as_function=True)
    with tf.compat.v1.Session(config=run_api.session_config()) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(loop)
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            session.run(loop)
            seconds.append(time.perf_counter() - start)
    return 1000 * min(seconds) / steps


def train_once(config_name, variant, phases):
    """Train `phases` phases of a config as the variant asks; their seconds."""
    overrides, _ = PPO_VARIANTS[variant]
    return phase_timing.train_phases(config_name, phases, **overrides)


def mechanism_table(repeats):
    """Markdown table of the milliseconds per step of each way and kernel set."""
    times = {(variant, kernels): [] for variant in MECHANISM_VARIANTS for kernels in KERNELS}
    for _ in range(repeats):
        for variant, kernels in times:
            milliseconds = phase_timing.run_child(f'mechanism,{variant},0', KERNELS[kernels])
            times[variant, kernels].append(milliseconds)
            print(f'mechanism {variant} {kernels}: {milliseconds:.3f} ms per step', flush=True)
    baseline = np.mean(times['function', 'oneDNN'])
    lines = [
        '| gradient step | kernels | runs | ms per step (mean) | vs function call, oneDNN |',
        '|---|---|---:|---:|---:|']
    for (variant, kernels), runs in times.items():
        way = 'inline in the loop' if variant == 'inline' else 'function call'
        lines.append(f'| {way} | {kernels} | {len(runs)} | {np.mean(runs):.3f} | '
                     f'{np.mean(runs) / baseline:.2f}x |')
    return '\n'.join(lines)


def main():
    """Run the benchmark as the command line asks and print its tables."""
    parser = phase_timing.parser(
        __doc__.split('\n')[0], 'pendulum,cartpole,cheetah', ','.join(PPO_VARIANTS), phases=4)
    parser.add_argument('--parts', default='mechanism,ppo')
    args = parser.parse_args()
    if args.child:
        name, variant, phases = args.child.split(',')
        if name == 'mechanism':
            print(json.dumps(time_mechanism(variant)))
        else:
            print(json.dumps(train_once(name, variant, int(phases))))
        return
    parts, configs = args.parts.split(','), args.configs.split(',')
    variants = args.variants.split(',')
    unknown = (set(parts) - {'mechanism', 'ppo'} or set(variants) - set(PPO_VARIANTS) or
               set(configs) - set(phase_timing.PHASE_STEPS))
    if unknown:
        parser.error(f'unknown parts, variants or configs {sorted(unknown)}; parts are '
                     f'mechanism, ppo; variants {", ".join(PPO_VARIANTS)}; configs '
                     f'{", ".join(phase_timing.PHASE_STEPS)}.')
    started, load_before = time.time(), os.getloadavg()[0]
    sections = []
    if 'mechanism' in parts:
        sections += [mechanism_table(args.repeats), '']
    if 'ppo' in parts:
        environments = {name: environment for name, (_, environment) in PPO_VARIANTS.items()}
        results = phase_timing.measure(
            configs, variants, args.repeats, args.phases, environments)
        baseline = 'function' if 'function' in variants else variants[0]
        sections.append(phase_timing.table(
            results, variants, args.phases, baseline, 'gradient graph'))
    text = phase_timing.report(
        f'python benchmarks/update_step.py --parts {args.parts} --configs {args.configs} '
        f'--variants {args.variants} --repeats {args.repeats} --phases {args.phases}',
        started, load_before, '\n'.join(sections), configs)
    phase_timing.publish(text, args.out)


if __name__ == '__main__':
    main()
