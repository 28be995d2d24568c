"""What benchmarks share: the record of how, when and where a run ran, and argument parsing."""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

import gymnasium

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_RESULTS = os.path.join(ROOT, 'benchmarks', 'results')


def results_dir(script):
    """The directory of a benchmark script's results: benchmarks/results/<script name>/.

    Args:
      script: The script's path, its `__file__`.
    """
    return os.path.join(_RESULTS, _name(script))


def probe_results_dir(script):
    """The directory of a probe's results: benchmarks/results/probes/<probe name>/.

    Args:
      script: The probe's path, its `__file__`.
    """
    return os.path.join(_RESULTS, 'probes', _name(script))


def _name(script):
    return os.path.splitext(os.path.basename(script))[0]


def run_record(load_before, load_after=None):
    """The command line, the date and the machine of this run, for a results file.

    The command's paths name no directory of the machine (see `portable`).

    Args:
      load_before: `os.getloadavg()` when the measurements began.
      load_after: `os.getloadavg()` when they ended; now if None.

    Returns:
      Dict with the keys 'command', 'date' and 'machine'.
    """
    return {
        'command': [portable(argument) for argument in sys.argv],
        'date': datetime.datetime.now().isoformat(),
        'machine': {
            'cores': os.cpu_count(), 'python': platform.python_version(),
            'gymnasium': gymnasium.__version__, 'load_before': load_before,
            'load_after': os.getloadavg() if load_after is None else load_after}}


def baseline_first(parser, flag, value, choices, baseline='scripts'):
    """The names in the comma-separated `value` of `--flag`, the baseline first.

    A value that does not start with `baseline`, or names something not in
    `choices`, stops the program with one line that says what the flag takes.
    """
    names = value.split(',')
    if names[0] != baseline or any(name not in choices for name in names):
        parser.error(f'--{flag} takes {baseline} first, then any of {", ".join(choices)}; '
                     f'got {value!r}.')
    return names


def probe_record(load_before, **extra):
    """`run_record` with this checkout's commit and the processor, and `extra` keys."""
    return dict(run_record(load_before), commit=commit(), processor=processor(), **extra)


def by_turns(names, rounds, measure):
    """Measure every name once a round, the order reversed every other round.

    Load that changes during the rounds then falls on every name alike.

    Args:
      names: What to measure, in the order of the first round.
      rounds: How many times to measure each.
      measure: Function of a name that returns its measurement.

    Returns:
      Dict from each name to its measurements, round by round.
    """
    results = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            results[name].append(measure(name))
            print(f'round {round_} {name}: {results[name][-1]}', flush=True)
    return results


def command_line(command, record):
    """The closing line of a results table: the command, the processor, the machine's load.

    Args:
      command: The command that wrote the table, as a user would type it.
      record: Dict with `run_record`'s keys, 'processor' (see `processor`) and 'commit'.
    """
    machine = record['machine']
    return (
        f'Command: `{command}`; {record["processor"]["model"]}, commit {record["commit"]}; '
        f'{machine["cores"]} cores; '
        f'1-minute load average {machine["load_before"][0]:.1f} before and '
        f'{machine["load_after"][0]:.1f} after; {record["date"][:16]}.')


def rounds_cells(values, baseline):
    """Table cells of a measurement repeated in rounds: its median, each round, and vs a baseline.

    Args:
      values: The measurement of each round.
      baseline: What the median's ratio divides by.
    """
    median = statistics.median(values)
    rounds = ', '.join(f'{value:.0f}' for value in values)
    return f'{median:.0f} | {rounds} | {median / baseline:.2f}x'


def processor():
    """The processor's model name and the wide vector extensions it reports (Linux).

    Seeded runs repeat to the digit on one processor; the extensions choose
    the kernels, so another processor may score otherwise.
    """
    with open('/proc/cpuinfo') as cpuinfo:
        text = cpuinfo.read()
    name = re.search(r'model name\s*:\s*(.*)', text)
    flags = set(re.search(r'flags\s*:\s*(.*)', text).group(1).split())
    return {'model': name.group(1) if name else 'unknown',
            'extensions': sorted(flag for flag in flags if flag.startswith(('avx', 'amx')))}


def commit(checkout=None):
    """The commit of a checkout, this script's by default, marked `+changes` if its code differs.

    Only tracked files outside `benchmarks/results/` count: a run that writes
    its results into the tree, or runs beside results not yet committed, ran
    the commit's code.
    """
    here = checkout or os.path.dirname(os.path.abspath(__file__))
    def git(*args):
        return subprocess.run(['git', *args], cwd=here, capture_output=True, text=True,
                              check=True).stdout.strip()
    dirty = git('status', '--porcelain', '--untracked-files=no', '--', ':(top)',
                ':(top,exclude)benchmarks/results')
    return git('rev-parse', '--short', 'HEAD') + ('+changes' if dirty else '')


def portable(argument, logdir=None, root=ROOT):
    """A command-line argument or path with the machine's directories taken out, for a record.

    A path inside `logdir` becomes relative to it, one inside the repository
    relative to its root, and any other absolute path `DIR/<its last name>`,
    so that records read alike on every machine. A flag's value
    (`--out=PATH`) and comma-separated lists are rewritten piece by piece;
    other text is returned as it is.

    Args:
      argument: A command-line argument or a path.
      logdir: The log directory that the record's checkpoints are in, or None.
      root: The repository's root: this checkout's by default.
    """
    flag, equals, value = argument.partition('=') if argument.startswith('-') else (
        '', '', argument)
    pieces = [_portable_path(piece, logdir, root) for piece in value.split(',')]
    return flag + equals + ','.join(pieces)


def _portable_path(path, logdir, root):
    if not os.path.isabs(path):
        return path
    path = os.path.normpath(path)
    for base in (logdir, root):
        if base and os.path.commonpath([path, os.path.normpath(base)]) == os.path.normpath(base):
            return os.path.relpath(path, base)
    return f'DIR/{os.path.basename(path)}'


def command_text(script, argv=None):
    """The command that ran a benchmark, as a user types it from the repository's root.

    Args:
      script: The script's path, its `__file__`.
      argv: Its arguments; this process's (`sys.argv[1:]`) if None.
    """
    arguments = sys.argv[1:] if argv is None else argv
    return ' '.join(['python', portable(os.path.abspath(script))] +
                    [portable(argument) for argument in arguments])


def write_results(out, name, text, data):
    """Print a results table and write it to OUT/NAME.md, and its data to OUT/NAME.json."""
    print(text)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f'{name}.md'), 'w') as file_:
        file_.write(text)
    with open(os.path.join(out, f'{name}.json'), 'w') as file_:
        json.dump(data, file_)


def replace_block(text, markers, block, name):
    """`text` with what lies between its two marker lines replaced by `block`.

    Args:
      text: The text of a page that holds a generated block.
      markers: Pair of the lines that open and close the block.
      block: The block's new text, without the markers.
      name: The page's name, for the error.

    Raises:
      ValueError: If the page lacks the markers.
    """
    begin, end = (re.escape(marker) for marker in markers)
    pattern = re.compile(f'{begin}\n.*?{end}', re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f'{name} lacks the markers {markers}.')
    return pattern.sub(lambda _: f'{markers[0]}\n{block}\n{markers[1]}', text)


def batch_tasks(text):
    """The (env_id, batch size) pairs of `--envs`, or an error saying how to write them."""
    tasks = []
    for task in text.split(','):
        env_id, _, size = task.partition(':')
        if not (env_id and size.isdigit() and int(size) > 0):
            raise argparse.ArgumentTypeError(
                f'{task!r} is not env_id:batch_size, for example Pendulum-v1:32.')
        tasks.append((env_id, int(size)))
    return tasks
