r"""Does a seeded run repeat its scores, and do the processor's kernels change them?

Trains one config (the quick start's `pendulum` by default) several times with
the training command, each in a fresh run directory: twice as installed, then
with TensorFlow's oneDNN kernels capped to narrower instruction sets
(`ONEDNN_MAX_CPU_ISA`) and with oneDNN off (`TF_ENABLE_ONEDNN_OPTS=0`). A cap
stands in for an older processor. Reads every phase's mean score from each
run's log and writes `benchmarks/results/repeatability/repeatability.md` and
`.json`, with the processor, the load and the package versions.

    python benchmarks/repeatability.py
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from lib import reporting

_SETTINGS = (
    ('as installed', {}),
    ('as installed, again', {}),
    ('oneDNN capped to AVX-512', {'ONEDNN_MAX_CPU_ISA': 'AVX512_CORE'}),
    ('oneDNN capped to AVX2', {'ONEDNN_MAX_CPU_ISA': 'AVX2'}),
    ('oneDNN capped to SSE4.1', {'ONEDNN_MAX_CPU_ISA': 'SSE41'}),
    ('oneDNN off', {'TF_ENABLE_ONEDNN_OPTS': '0'}),
)
_PHASE = re.compile(
    r'Step (\d+), phase (train|eval): mean score (-?[\d.]+) \(std ([\d.]+)\)')


def train(config, variables):
    """Trains `config` once with extra environment variables and returns its phase scores.

    Returns:
      List of [step, phase, mean score, std] in the order the log wrote them.
    """
    with tempfile.TemporaryDirectory() as logdir:
        result = subprocess.run(
            [sys.executable, '-m', 'agents.scripts.train', f'--logdir={logdir}',
             f'--config={config}'],
            env={**os.environ, **variables}, capture_output=True, text=True, check=False)
    if result.returncode:
        sys.exit(f'Training {config} with {variables} failed:\n{result.stderr[-2000:]}')
    return [[int(step), phase, float(mean), float(std)]
            for step, phase, mean, std in _PHASE.findall(result.stderr)]


def versions():
    """Versions of the packages whose kernels make the scores (Gymnasium's is in the record)."""
    import numpy  # pylint: disable=import-outside-toplevel
    import tensorflow  # pylint: disable=import-outside-toplevel
    return {'tensorflow': tensorflow.__version__, 'numpy': numpy.__version__}


def table(config, runs):
    """Markdown rows: each setting's first training phase, first and last evaluation."""
    reference = runs[0]['scores']
    lines = [
        f'| `{config}` | first training phase | first evaluation | last evaluation | '
        'every score equal to the first run |',
        '|---|---:|---:|---:|---|']
    for run in runs:
        scores = run['scores']
        train_phases = [s for s in scores if s[1] == 'train']
        evals = [s for s in scores if s[1] == 'eval']
        lines.append(
            f"| {run['setting']} | {train_phases[0][2]:.2f} | {evals[0][2]:.2f} | "
            f'{evals[-1][2]:.2f} ± {evals[-1][3]:.2f} | '
            f"{'yes' if scores == reference else 'no'} |")
    return '\n'.join(lines)


def main():
    """Trains the config under each setting and writes the results files."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default='pendulum')
    args = parser.parse_args()
    load_before = os.getloadavg()
    runs = []
    for setting, variables in _SETTINGS:
        runs.append({'setting': setting, 'variables': variables,
                     'scores': train(args.config, variables)})
        print(table(args.config, runs).splitlines()[-1], flush=True)
    record = reporting.run_record(load_before)
    record['machine'].update(processor=reporting.processor(), **versions())
    out = reporting.results_dir(__file__)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'repeatability.json'), 'w') as file:
        json.dump({**record, 'config': args.config, 'runs': runs}, file, indent=1)
    machine = record['machine']
    with open(os.path.join(out, 'repeatability.md'), 'w') as file:
        file.write(
            f"# Repeatability of a seeded run\n\n`{' '.join(record['command'])}` on "
            f"{record['date'][:10]}: {machine['processor']['model']} "
            f"({', '.join(machine['processor']['extensions'])}), {machine['cores']} cores, "
            f"load average {machine['load_before'][0]:.1f} before and "
            f"{machine['load_after'][0]:.1f} after; TensorFlow {machine['tensorflow']}, "
            f"NumPy {machine['numpy']}, Gymnasium {machine['gymnasium']}.\n\n"
            f'{table(args.config, runs)}\n')
    print(f'Wrote {out}/repeatability.md and .json')


if __name__ == '__main__':
    main()
