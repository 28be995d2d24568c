r"""How near the machine's matmul peak the update's arithmetic can come, at its shapes.

`benchmarks/mujoco_throughput.py` measures the whole update of rl-baselines3-zoo's
HalfCheetah schedule (gradient steps of 64 samples through two 256-256 ReLU
networks) as a share of the machine's FP32 matmul peak, the best of 5 runs
of a 2048x2048x2048 product. Products of 64 rows cannot use the machine as a
2048-square one does. This script measures the ceiling that shape sets: a
gradient step with nothing around its products, done by hand (forward
through both networks, backward to every weight and hidden layer, a plain
gradient-descent step on the weights), 128,000 samples' worth of such steps
in one XLA-compiled loop, in one `session.run`. There is no gathering,
optimizer state, clipping or loss around them; the whole update can only be
slower. The rate counts the products' FLOPs as mujoco_throughput.py does,
and the peak is measured in the same process with the same session
settings, alternating with the loops.

Rows: the schedule's minibatch of 64, and larger ones, which would change
learning and are measured only to show where the ceiling comes from.

    python benchmarks/update_ceiling.py [--minibatches 64,128,256,512,4096] [--repeats 3]

Writes update_ceiling.md and .json to benchmarks/results/update_ceiling/ (or
--out). Run nothing else meanwhile.
"""

import argparse
import os
import time

from lib import reporting
from lib import zoo_schedule
import numpy as np

SAMPLES_PER_LOOP = 128_000
LEARNING_RATE = 1e-6


def products_loop(minibatch_size):
    """An op that runs bare gradient steps of the schedule's networks; its step count.

    Each step multiplies a fixed minibatch through both networks, propagates
    a fixed output gradient back, and moves the weights against their
    gradients, so that every step depends on the one before it.
    """
    import tensorflow as tf
    random = np.random.default_rng(0)
    networks = zoo_schedule.layer_sizes(
        zoo_schedule.OBSERV_SIZE, zoo_schedule.ACTION_SIZE)
    observ = tf.constant(random.normal(size=(minibatch_size, networks[0][0])), tf.float32)
    output_gradients = [
        tf.constant(random.normal(size=(minibatch_size, sizes[-1])), tf.float32)
        for sizes in networks]
    weights = [
        tf.compat.v1.get_variable(f'weight{index}_{layer}', initializer=tf.constant(
            random.normal(size=(inputs, outputs)) / np.sqrt(inputs), tf.float32))
        for index, sizes in enumerate(networks)
        for layer, (inputs, outputs) in enumerate(zip(sizes[:-1], sizes[1:]))]
    steps = SAMPLES_PER_LOOP // minibatch_size

    def gradient_step(matrices, output_gradient):
        inputs = [observ]
        for matrix in matrices[:-1]:
            inputs.append(tf.nn.relu(tf.matmul(inputs[-1], matrix)))
        gradient, updated = output_gradient, list(matrices)
        for index in reversed(range(len(matrices))):
            updated[index] -= LEARNING_RATE * tf.matmul(inputs[index], gradient, transpose_a=True)
            if index:
                gradient = tf.matmul(gradient, matrices[index], transpose_b=True) * tf.cast(
                    inputs[index] > 0, tf.float32)
        return updated

    @tf.function(jit_compile=True, autograph=False)
    def loop(matrices):
        def body(index, matrices):
            updated, start = [], 0
            for sizes, output_gradient in zip(networks, output_gradients):
                end = start + len(sizes) - 1
                updated += gradient_step(matrices[start:end], output_gradient)
                start = end
            return index + 1, updated
        _, matrices = tf.while_loop(
            lambda index, _: index < steps, body, (0, matrices), parallel_iterations=1)
        return matrices

    final = loop([weight.read_value() for weight in weights])
    return tf.group([weight.assign(value) for weight, value in zip(weights, final)]), steps


def measure(minibatch_size, repeats):
    """GFLOP/s of the bare gradient steps and the matmul peak, each the best of its runs."""
    import tensorflow as tf

    from agents.scripts import run_api
    tf.compat.v1.disable_eager_execution()
    with tf.Graph().as_default():
        loop, steps = products_loop(minibatch_size)
        flops = steps * zoo_schedule.gradient_step_flops(
            zoo_schedule.OBSERV_SIZE, zoo_schedule.ACTION_SIZE, minibatch_size)
        with tf.compat.v1.Session(config=run_api.session_config()) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(loop)  # Compiles.
            rates, peaks = [], []
            for _ in range(repeats):
                start = time.perf_counter()
                session.run(loop)
                rates.append(flops / (time.perf_counter() - start) / 1e9)
                peaks.append(zoo_schedule.matmul_peak())
    return dict(minibatch_size=minibatch_size, steps=steps, gflops=max(rates),
                peak_gflops=max(peaks), milliseconds=flops / max(rates) / 1e6 / steps)


def table(results):
    """Markdown table of the ceiling per minibatch size."""
    lines = [
        '| minibatch | ms per bare gradient step | GFLOP/s | FP32 matmul peak '
        '| share of the peak |',
        '|---:|---:|---:|---:|---:|']
    for result in results:
        schedule = ' (the schedule)' if (
            result['minibatch_size'] == zoo_schedule.SCHEDULE['minibatch_size']) else ''
        lines.append(
            f'| {result["minibatch_size"]}{schedule} | {result["milliseconds"]:.3f} | '
            f'{result["gflops"]:.0f} | {result["peak_gflops"]:.0f} | '
            f'{result["gflops"] / result["peak_gflops"]:.0%} |')
    return '\n'.join(lines)


def main():
    """Measure each minibatch size and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--minibatches', default='64,128,256,512,4096')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--out', default=reporting.results_dir(__file__))
    args = parser.parse_args()
    sizes = args.minibatches.split(',')
    if not all(size.isdigit() and 0 < int(size) <= SAMPLES_PER_LOOP for size in sizes):
        parser.error(f'--minibatches takes sizes from 1 to {SAMPLES_PER_LOOP:,} separated by '
                     f'commas, for example 64,256; got {args.minibatches!r}.')
    chosen = os.environ.get('XLA_FLAGS')  # Before the scripts' own choice of emitters.
    from agents.scripts.cli import tensorflow_log
    tensorflow_log.import_quietly()  # As the training process loads TensorFlow.
    load = os.getloadavg()
    results = [measure(int(size), args.repeats) for size in sizes]
    record = reporting.run_record(load)
    text = table(results) + (
        f'\n\nCommand: `{f"XLA_FLAGS={chosen} " if chosen else ""}'
        f'python benchmarks/update_ceiling.py --minibatches {args.minibatches} '
        f'--repeats {args.repeats}`; {os.cpu_count()} cores; 1-minute load average '
        f'{load[0]:.1f} before and {record["machine"]["load_after"][0]:.1f} after.\n')
    reporting.write_results(args.out, 'update_ceiling', text, dict(
        results=results, xla_flags=os.environ.get('XLA_FLAGS'), **record))


if __name__ == '__main__':
    main()
