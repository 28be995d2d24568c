r"""Where a collection step's time goes: the graph's operations and the environments.

Collection (the policy acting while the environments step) is what bounds a
HalfCheetah run once the update is compiled (benchmarks/mujoco_throughput.py).
This script takes one batch step of a config apart (`cheetah` unless
--config says otherwise), on the `parallel` backend with the config's
environments:

- the time per batch step of the training graph's collection, untraced, 16
  steps per run, the median run: acting (the policy's mode, no learning, as
  evaluation collects) and training (samples, normalizer updates and
  stores, as training collects; the median run holds no update);
- one traced run of acting: the time and count of the graph's operations
  per batch step by operation type, the call into Python that steps the
  environments (`PyFunc`) among them, and their count by the part of the
  step that makes them (from the name scope in the loop's body: the policy
  acting, the environment step, `simulate`'s own bookkeeping, and the loop
  itself);
- the floor of in-graph stepping: the same environments stepped by a graph
  loop with nothing else in it (zero actions, no policy, no bookkeeping),
  16 steps per run;
- the environments alone, stepped from Python with random actions: back to
  back, and after a busy pause like the graph's work between steps, during
  which the workers may go to sleep.

    python benchmarks/collection_profile.py [--config cheetah] [--runs 50] [--out DIR]

Writes collection_profile.md and .json (collection_profile_<config>.md and
.json for another config) to benchmarks/results/collection_profile/ (or
--out). Run nothing else meanwhile.
"""

import argparse
import collections
import os

from lib import collection
from lib import reporting

PARTS = {'perform': 'the policy acting', 'environment': 'the environment step'}


def profile_graph(config_name, runs):
    """The collection rate, and the traced time and count of operations per batch step by type."""
    import tensorflow as tf

    from agents.scripts import environments
    from agents.scripts import run_api
    config = run_api.make_config(config_name)
    with tf.Graph().as_default():
        batch_env = run_api.define_batch_env(
            environments.environment_constructors(config, config.num_agents), 'parallel')
        try:
            op, is_training = collection.collection_step(config, batch_env)
            floor = collection.stepping_loop(batch_env)
            with tf.compat.v1.Session(config=run_api.session_config()) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                sess.run(batch_env.reset())
                floor_seconds = collection.median_seconds_per_batch_step(sess, floor, runs)
                seconds = collection.median_seconds_per_batch_step(sess, op, runs)
                metadata = tf.compat.v1.RunMetadata()
                sess.run(op, options=tf.compat.v1.RunOptions(
                    trace_level=tf.compat.v1.RunOptions.FULL_TRACE), run_metadata=metadata)
                training = {is_training: True}
                training_seconds = collection.median_seconds_per_batch_step(
                    sess, op, 4 * runs, training)
                training_operations = collection.traced_operations(sess, op, training)
        finally:
            batch_env.close()
    micros, counts, parts = collections.Counter(), collections.Counter(), collections.Counter()
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            label = node.timeline_label
            kind = label.split('=')[-1].split('(')[0].strip() if '=' in label else node.node_name
            micros[kind] += node.all_end_rel_micros / collection.STEPS_PER_RUN
            counts[kind] += 1 / collection.STEPS_PER_RUN
            parts[_part_of_step(node.node_name)] += 1 / collection.STEPS_PER_RUN
    return dict(
        num_agents=config.num_agents, batch_step_micros=seconds * 1e6,
        env_steps_per_second=config.num_agents / seconds,
        training_batch_step_micros=training_seconds * 1e6,
        training_env_steps_per_second=config.num_agents / training_seconds,
        training_op_count=training_operations,
        floor_batch_step_micros=floor_seconds * 1e6,
        floor_env_steps_per_second=config.num_agents / floor_seconds,
        op_micros=dict(micros), op_counts=dict(counts), part_op_counts=dict(parts))


def _part_of_step(node_name):
    """The part of the collection step an operation belongs to, from its name scope.

    Operations inside the loop's body are named `simulate/while/body/_N/<scope>/...`:
    `perform` is the policy acting (normalizer, network, sampling),
    `environment` the step of the environments in Python. The rest of the body is
    `simulate`'s own work: the conditionals that reset environments and end
    episodes, scores, lengths and summaries.
    """
    names = node_name.split('/')
    if names[:3] != ['simulate', 'while', 'body']:
        return 'the loop: control flow and inputs'
    if len(names) > 5 and names[4] in PARTS:
        return PARTS[names[4]]
    return 'resets, episode ends, scores, summaries'


def table(config_name, graph, environments):
    """Markdown tables of the measurements."""
    total = sum(graph['op_micros'].values())
    lines = [
        f'`{config_name}` config, {graph["num_agents"]} environments on the `parallel` '
        f'backend, the training graph\'s collection, {collection.STEPS_PER_RUN} steps per '
        '`session.run`.', '',
        f'Untraced, acting (the policy\'s mode, no learning, as evaluation collects): '
        f'{graph["batch_step_micros"]:.0f} us per batch step, '
        f'{graph["env_steps_per_second"]:,.0f} env steps/s.', '',
        f'Untraced, training (samples, normalizer updates and stores; the median run, '
        f'which holds no update): {graph["training_batch_step_micros"]:.0f} us per batch '
        f'step, {graph["training_env_steps_per_second"]:,.0f} env steps/s, '
        f'{graph["training_op_count"]:.0f} operations per batch step.', '',
        f'The floor of in-graph stepping, a graph loop that only steps the same environments '
        f'(zero actions): {graph["floor_batch_step_micros"]:.0f} us per batch step, '
        f'{graph["floor_env_steps_per_second"]:,.0f} env steps/s.', '',
        f'Traced acting (tracing adds time to every operation): {total:.0f} us of '
        f'operations per batch step, {sum(graph["op_counts"].values()):.0f} operations.', '',
        '| operation type | us per batch step | operations per batch step |',
        '|---|---:|---:|']
    for kind, micros in sorted(graph['op_micros'].items(), key=lambda item: -item[1])[:12]:
        lines.append(f'| {kind} | {micros:.1f} | {graph["op_counts"][kind]:.1f} |')
    lines += ['', '| part of the step (name scope) | operations per batch step |', '|---|---:|']
    for part, count in sorted(graph['part_op_counts'].items(), key=lambda item: -item[1]):
        lines.append(f'| {part} | {count:.1f} |')
    lines += [
        '', 'The environments alone, one batch step from Python (`ParallelBatchEnv.step`):', '',
        '| busy pause before each step | median | mean |', '|---:|---:|---:|']
    for pause, result in environments.items():
        lines.append(f'| {pause} us | {result["median"]:.0f} us | {result["mean"]:.0f} us |')
    return '\n'.join(lines)


def main():
    """Run both measurements and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default='cheetah')
    parser.add_argument('--runs', type=int, default=50)
    parser.add_argument('--steps', type=int, default=3000)
    parser.add_argument('--out', default=reporting.results_dir(__file__))
    args = parser.parse_args()
    load = os.getloadavg()
    # The environments first, before TensorFlow's threads have started.
    environments = collection.profile_environments(args.config, args.steps)
    graph = profile_graph(args.config, args.runs)
    record = reporting.run_record(load)
    text = table(args.config, graph, environments) + (
        f'\n\nCommand: `python benchmarks/collection_profile.py --config {args.config} '
        f'--runs {args.runs} --steps {args.steps}`; {os.cpu_count()} cores; 1-minute load '
        f'average {load[0]:.1f} before '
        f'and {record["machine"]["load_after"][0]:.1f} after; {record["date"][:16]}.\n')
    reporting.write_results(
        args.out, 'collection_profile' + ('' if args.config == 'cheetah' else f'_{args.config}'),
        text, dict(graph=graph, environments=environments, record=record))


if __name__ == '__main__':
    main()
