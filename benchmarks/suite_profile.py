"""Where the test suite's time goes, test by test.

    python benchmarks/suite_profile.py [--out DIR] [-- pytest arguments]

runs `python -m pytest` (the README's test command, or the arguments given
after `--`) with this module as a pytest plugin. Around each test, in each
pytest process, the plugin records the test's duration, the CPU time of the
process and of the subprocesses it waited for (`resource.getrusage`), and
the number of TensorFlow operations the process built. The script adds the
run's wall time and the whole machine's CPU time over the run (from
`/proc/stat`, on Linux), which includes processes nobody waits for, such as
Ray's actors and environment workers. Stop other work first: the machine's
CPU counts everything that runs.

Writes suite_profile.md (totals and the slowest files) and suite_profile.json
(every test's row, the commit and the processor) to --out, by default
benchmarks/results/suite_profile/. CONTRIBUTING.md#tests states what the
figures say.
"""

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import pytest

_ROWS_VARIABLE = 'SUITE_PROFILE_ROWS'
_OPERATIONS = [0]


def _count_operations():
    """Count the operations any graph of this process builds, once TensorFlow is loaded."""
    if getattr(_count_operations, 'done', False) or 'tensorflow' not in sys.modules:
        return
    from tensorflow.python.framework import ops  # pylint: disable=import-outside-toplevel

    create = ops.Graph._create_op_internal  # pylint: disable=protected-access

    def counted(self, *args, **kwargs):
        _OPERATIONS[0] += 1
        return create(self, *args, **kwargs)

    ops.Graph._create_op_internal = counted  # pylint: disable=protected-access
    _count_operations.done = True


def _cpu_seconds():
    """CPU seconds of this process and of the children it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    """Record one test's duration, CPU and operations built, as a line of JSON."""
    path = os.environ.get(_ROWS_VARIABLE)
    if not path:
        yield
        return
    # TensorFlow loads with the test modules; operations built by a module's
    # fixtures count in the first test that uses them.
    _count_operations()
    own, children = _cpu_seconds()
    start, operations = time.perf_counter(), _OPERATIONS[0]
    yield
    own_after, children_after = _cpu_seconds()
    row = dict(
        test=item.nodeid, seconds=time.perf_counter() - start, cpu=own_after - own,
        subprocess_cpu=children_after - children, operations=_OPERATIONS[0] - operations)
    with open(path, 'a', encoding='utf-8') as rows:
        rows.write(json.dumps(row) + '\n')


def machine_cpu_seconds():
    """CPU seconds the whole machine has spent busy since boot, or None off Linux."""
    try:
        with open('/proc/stat', encoding='ascii') as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    user, nice, system, _, _, irq, softirq = (int(value) for value in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf('SC_CLK_TCK')


def per_file(rows):
    """Sum the rows of each test file.

    Args:
      rows: Dicts with `test` (a pytest node id), `seconds`, `cpu`,
        `subprocess_cpu` and `operations`.

    Returns:
      List of dicts with `file`, `tests` and the sums of the other keys,
      longest `seconds` first.
    """
    files = collections.defaultdict(collections.Counter)
    for row in rows:
        totals = files[row['test'].split('::')[0]]
        totals['tests'] += 1
        for key in ('seconds', 'cpu', 'subprocess_cpu', 'operations'):
            totals[key] += row[key]
    summed = [dict(file=name, **totals) for name, totals in files.items()]
    return sorted(summed, key=lambda each: -each['seconds'])


def profile(pytest_args, rows_path):
    """Run pytest with this module as a plugin; return its exit code and the run's totals."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, **{_ROWS_VARIABLE: rows_path})
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [here, env.get('PYTHONPATH')]))
    machine_before, start = machine_cpu_seconds(), time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = subprocess.call(
        [sys.executable, '-m', 'pytest', '-p', 'suite_profile', '-p', 'no:cacheprovider']
        + pytest_args, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    machine_after = machine_cpu_seconds()
    totals = dict(
        seconds=time.perf_counter() - start,
        waited_cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        machine_cpu=None if machine_before is None else machine_after - machine_before)
    return code, totals


def _markdown(command, record, rows, slowest=10):
    """The results page: the run's totals, then the slowest files."""
    files = per_file(rows)
    totals = record['totals']
    machine = totals['machine_cpu']
    processor = record['processor']
    lines = [
        '# Where the test suite\'s time goes', '',
        f'`{command}` at commit {record["commit"]}, on {processor["model"]}'
        f'{" with AVX-512" if "avx512f" in processor["extensions"] else ""} '
        f'({record["machine"]["cores"]} cores); {len(rows)} '
        f'tests in {totals["seconds"]:.0f} s; load average '
        f'{record["machine"]["load_before"][0]:.2f} before, '
        f'{record["machine"]["load_after"][0]:.2f} after.', '',
        '| CPU seconds | |', '| --- | ---: |',
        f'| pytest processes, inside tests | {sum(row["cpu"] for row in rows):.0f} |',
        f'| subprocesses they waited for, inside tests | '
        f'{sum(row["subprocess_cpu"] for row in rows):.0f} |',
        f'| pytest and every process it waited for | {totals["waited_cpu"]:.0f} |',
        f'| the whole machine | {"not measured" if machine is None else f"{machine:.0f}"} |',
        '', f'Operations built: {sum(row["operations"] for row in rows):,}.', '',
        f'The {slowest} slowest files, by the sum of their tests\' durations:', '',
        '| file | tests | seconds | CPU, pytest | CPU, subprocesses | operations built |',
        '| --- | ---: | ---: | ---: | ---: | ---: |']
    lines += [
        f'| `{each["file"]}` | {each["tests"]} | {each["seconds"]:.0f} | {each["cpu"]:.0f} | '
        f'{each["subprocess_cpu"]:.0f} | {each["operations"]:,} |' for each in files[:slowest]]
    return '\n'.join(lines) + '\n'


def main(argv=None):
    """Profile a pytest run and write its results; return pytest's exit code."""
    # Imported here: pytest processes load this module as a plugin, and
    # `reporting` imports Gymnasium.
    import reporting  # pylint: disable=import-outside-toplevel

    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', default=reporting.results_dir(__file__))
    args, pytest_args = parser.parse_known_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as directory:
        rows_path = os.path.join(directory, 'rows.jsonl')
        code, totals = profile([arg for arg in pytest_args if arg != '--'], rows_path)
        with open(rows_path, encoding='utf-8') as lines:
            rows = [json.loads(line) for line in lines]
    record = dict(
        reporting.run_record(load_before), commit=reporting.commit(),
        processor=reporting.processor(), exit_code=code, totals=totals)
    command = ' '.join(
        ['python benchmarks/suite_profile.py'] + (sys.argv[1:] if argv is None else argv))
    reporting.write_results(
        args.out, 'suite_profile', _markdown(command, record, rows),
        dict(record, tests=rows))
    return code


if __name__ == '__main__':
    sys.exit(main())
