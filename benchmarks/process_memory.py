r"""Where a HalfCheetah run's resident memory goes, and what the trainer's measures save.

Measures, each in a fresh process:

- `import tensorflow`: resident and private memory and seconds, as TensorFlow
  does it and as the command line scripts do it (skipping the modules
  training never uses, `tools.process_memory.skipping_unused_imports`);
- a training run of a config (`cheetah` by default) on the `parallel`
  backend, loading TensorFlow as the scripts do: as they run it, and for
  comparison with XLA's fusion emitters (`XLA_FLAGS=
  --xla_cpu_use_fusion_emitters=true`, TensorFlow's default, which the
  scripts turn off) and with the training loop keeping the memory it frees.
  Every half second the resident memory of the trainer and of the whole
  process tree, and at the end each process's high-water mark (VmHWM).

    python benchmarks/process_memory.py [--steps 150000] [--config cheetah]

Writes process_memory.md and .json to benchmarks/results/process_memory/
(or --out). Run nothing else meanwhile.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from lib import reporting
from lib import resident_memory

# Each training part: its label, whether the loop returns freed memory, and
# what it adds to the environment of its process.
PARTS = {
    'keep': ('keeps freed memory', False, {}),
    'fusion': ("returns freed memory, XLA's fusion emitters", True,
               dict(XLA_FLAGS='--xla_cpu_use_fusion_emitters=true')),
    'release': ('returns freed memory (as the scripts run)', True, {}),
}

_IMPORT = '''
import json, sys, time
from agents.tools import process_memory
start = time.perf_counter()
if sys.argv[1] == "skipping":
    with process_memory.skipping_unused_imports():
        import tensorflow
else:
    import tensorflow
seconds = time.perf_counter() - start
fields = {line.split(":")[0]: int(line.split()[1]) for line in open("/proc/self/smaps_rollup")
          if line.split()[-1] == "kB"}
print(json.dumps(dict(rss=fields["Rss"] / 1024, private=fields["Private_Dirty"] / 1024,
                      seconds=seconds)))
'''


def measure_import(how):
    """Memory and seconds of importing TensorFlow in a fresh process."""
    output = subprocess.run(
        [sys.executable, '-c', _IMPORT, how], capture_output=True, text=True, check=True)
    return json.loads(output.stdout.splitlines()[-1])


def _kind(pid):
    """The role of a process of the run, from its command line and parent."""
    if pid == os.getpid():
        return 'trainer'
    command = resident_memory.command_line(pid)
    if 'resource_tracker import main' in command:
        return 'resource tracker'
    # Workers started by the forkserver keep its command line; it is the trainer's child.
    forkserver = 'forkserver import main' in command
    if forkserver and resident_memory.status_field(pid, 'PPid') == os.getpid():
        return 'forkserver'
    return 'environment worker'


def measure_training(config_name, steps, release):
    """Train `steps` of a config; sample memory; return the samples and the marks."""
    from agents.scripts.cli import tensorflow_log
    tensorflow_log.import_quietly()
    from absl import logging

    from agents.scripts import run_api
    from agents.scripts import train
    from agents.tools import process_memory
    if not release:
        process_memory.release_free_memory = lambda: False
    logging.set_verbosity(logging.WARNING)
    config = run_api.make_config(config_name)
    with config.unlocked():
        config.update(steps=steps, eval_every=steps)
    with tempfile.TemporaryDirectory() as logdir, resident_memory.MemorySampler(
            describe=_kind) as sampler:
        for _ in train.train(config, logdir, 'parallel'):
            pass
    return dict(samples=sampler.samples, marks=list(sampler.marks.values()))


def _run_part(part, args, directory):
    path = os.path.join(directory, f'{part}.json')
    subprocess.run(
        [sys.executable, os.path.abspath(__file__), f'--part={part}', f'--result={path}',
         f'--steps={args.steps}', f'--config={args.config}'],
        env={**os.environ, **PARTS[part][2]}, check=True)
    with open(path) as file_:
        return json.load(file_)


def table(imports, runs, config, steps):
    """Markdown tables of the measurements."""
    lines = [
        '`import tensorflow` in a fresh process (Keras 3 installed):\n',
        '| how | RSS | private memory | seconds |', '|---|---:|---:|---:|']
    for how, label in (('plain', 'as TensorFlow does it'),
                       ('skipping', 'as the scripts do it, skipping unused modules')):
        each = imports[how]
        lines.append(f'| {label} | {each["rss"]:,.0f} MiB | {each["private"]:,.0f} MiB | '
                     f'{each["seconds"]:.1f} |')
    lines += [
        f'\nTraining `{config}` for {steps:,} steps (`parallel` backend, '
        'TensorFlow loaded as the scripts do it):\n',
        '| training loop | trainer, median while training | trainer, peak | '
        'whole tree, peak sampled | sum of each process\'s high-water mark |',
        '|---|---:|---:|---:|---:|']
    for part, (label, _, _) in PARTS.items():
        run = runs[part]
        later = [sample for sample in run['samples'] if sample[0] >= 20] or run['samples']
        lines.append(
            f'| {label} | {statistics.median(s[1] for s in later):,.0f} MiB | '
            f'{max(s[1] for s in run["samples"]):,.0f} MiB | '
            f'{max(s[2] for s in run["samples"]):,.0f} MiB | '
            f'{sum(mark for _, mark in run["marks"]):,.0f} MiB |')
    marks = runs['release']['marks']
    lines += [
        '\nEach process\'s high-water mark, as the scripts run:\n',
        '| process | MiB |', '|---|---:|']
    lines += [f'| {kind} | {mark:,.0f} |' for kind, mark in sorted(marks, key=lambda m: -m[1])]
    lines.append(f'| **sum** | **{sum(mark for _, mark in marks):,.0f}** |')
    return '\n'.join(lines)


def main():
    """Measure as the command line asks and write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=150_000)
    parser.add_argument('--out', default=reporting.results_dir(__file__))
    parser.add_argument('--config', default='cheetah')
    parser.add_argument('--part', choices=tuple(PARTS), help=argparse.SUPPRESS)
    parser.add_argument('--result', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        with open(args.result, 'w') as file_:
            json.dump(measure_training(args.config, args.steps, PARTS[args.part][1]), file_)
        return
    load = os.getloadavg()
    imports = {how: measure_import(how) for how in ('plain', 'skipping')}
    with tempfile.TemporaryDirectory() as directory:
        runs = {part: _run_part(part, args, directory) for part in PARTS}
    text = table(imports, runs, args.config, args.steps)
    command = reporting.command_text(__file__)
    text += (f'\n\nCommand: `{command}`; {os.cpu_count()} cores; 1-minute load average '
             f'{load[0]:.1f} before and {os.getloadavg()[0]:.1f} after.\n')
    reporting.write_results(args.out, 'process_memory', text, dict(
        config=args.config, steps=args.steps, imports=imports, runs=runs,
        record=reporting.run_record(load)))


if __name__ == '__main__':
    main()
