"""Where the test suite's time goes, tier by tier and test by test.

    python benchmarks/suite_profile.py [--against CHECKOUT]
    python benchmarks/suite_profile.py --check
    python benchmarks/suite_profile.py --out DIR -- [pytest arguments]

The first form measures the suite's two tiers one after the other: the unit
tier (`python -m pytest -m "not slow and not integration"`) and the default
run (`python -m pytest`, the README's test command, which CI runs). With
`--against`, it first measures the default run of another checkout of this
repository (for example one made with `git worktree add ../old f777262`), so
that both are timed in one sitting. It writes every test's row to
benchmarks/results/suite_profile/suite_profile.json and, from that file, the
tables of CONTRIBUTING.md#tests between their markers. `--check` writes
nothing and exits 1 if those tables are not what the committed file gives.

The last form profiles one pytest run of the given arguments and writes its
tables (suite_profile.md) and rows (suite_profile.json) to DIR, for a closer
look at part of the suite.

Each run is `python -m pytest` with this module as a plugin. Around each test,
in each pytest process, the plugin records the test's outcome and duration,
the CPU time of the process and of the subprocesses it waited for
(`resource.getrusage`), and the number of TensorFlow operations the process
built. The script adds each run's wall time and the whole machine's CPU time
over it (from `/proc/stat`, on Linux), which includes processes nobody waits
for, such as Ray's actors and environment workers. Stop other work first: the
machine's CPU counts everything that runs.
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
_OUTCOMES = {}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTRIBUTING = os.path.join(ROOT, 'CONTRIBUTING.md')
CONTRIBUTING_MARKERS = ('<!-- suite tables: written by benchmarks/suite_profile.py -->',
                        '<!-- end of suite tables -->')
# The tiers of CONTRIBUTING.md#tests: name, how it is run, and its pytest arguments.
TIERS = (
    ('unit', 'python -m pytest -m "not slow and not integration"',
     ['-m', 'not slow and not integration']),
    ('default (README, CI)', 'python -m pytest', []))
SLOWEST = 10


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


def pytest_runtest_logreport(report):
    """Keep each test's outcome: failed if any phase failed, skipped if one skipped."""
    if report.failed:
        _OUTCOMES[report.nodeid] = 'failed'
    elif report.skipped:
        _OUTCOMES.setdefault(report.nodeid, 'skipped')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
    """Record one test's outcome, duration, CPU and operations built, as a line of JSON."""
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
        test=item.nodeid, outcome=_OUTCOMES.pop(item.nodeid, 'passed'),
        seconds=round(time.perf_counter() - start, 4), cpu=round(own_after - own, 4),
        subprocess_cpu=round(children_after - children, 4),
        operations=_OPERATIONS[0] - operations,
        process=getattr(item.config, 'workerinput', {}).get('workerid', 'main'))
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


def profile(pytest_args, checkout=ROOT):
    """Run pytest in a checkout with this module as a plugin.

    Args:
      pytest_args: Arguments after `python -m pytest`.
      checkout: The directory of the checkout whose tests run; its `agents`
        package is the one imported.

    Returns:
      Dict of the run: `pytest_args`, `commit`, `exit_code`, `totals` (the
      wall seconds, the CPU of pytest and the processes it waited for, and
      the machine's CPU), `outcomes` (the count of tests by outcome) and
      `tests`, one row per test.
    """
    from lib import reporting  # pylint: disable=import-outside-toplevel
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as directory:
        rows_path = os.path.join(directory, 'rows.jsonl')
        env = dict(os.environ, **{_ROWS_VARIABLE: rows_path})
        env['PYTHONPATH'] = os.pathsep.join(filter(None, [checkout, here, env.get('PYTHONPATH')]))
        machine_before, start = machine_cpu_seconds(), time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        code = subprocess.call(
            [sys.executable, '-m', 'pytest', '-p', 'suite_profile', '-p', 'no:cacheprovider']
            + pytest_args, env=env, cwd=checkout)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        machine_after = machine_cpu_seconds()
        rows = []
        if os.path.exists(rows_path):
            with open(rows_path, encoding='utf-8') as lines:
                rows = [json.loads(line) for line in lines]
    totals = dict(
        seconds=time.perf_counter() - start,
        waited_cpu=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        machine_cpu=None if machine_before is None else machine_after - machine_before)
    outcomes = collections.Counter(row['outcome'] for row in rows)
    return dict(pytest_args=pytest_args, commit=reporting.commit(checkout), exit_code=code,
                totals=totals, outcomes=dict(outcomes), tests=rows)


def _counts(run):
    """The outcomes of a run's tests, as pytest's summary says them: '3 passed, 1 skipped'."""
    counts = run['outcomes']
    return ', '.join(f'{counts[outcome]:,} {outcome}'
                     for outcome in ('passed', 'failed', 'skipped') if counts.get(outcome))


def _number(value):
    return 'not measured' if value is None else f'{value:,.0f}'


def _seconds(value):
    return _number(value) + ('' if value is None else ' s')


def _machine_line(record):
    processor = record['processor']
    avx512 = ' with AVX-512' if 'avx512f' in processor['extensions'] else ''
    machine = record['machine']
    return (f'{processor["model"]}{avx512}, {machine["cores"]} cores, Python '
            f'{machine["python"]}; load average {machine["load_before"][0]:.2f} before, '
            f'{machine["load_after"][0]:.2f} after; {record["date"][:10]}')


def cpu_table(run):
    """Markdown lines: where a run's CPU seconds went."""
    rows, totals = run['tests'], run['totals']
    return [
        '| CPU seconds | |', '| --- | ---: |',
        f'| pytest processes, inside tests | {sum(row["cpu"] for row in rows):,.0f} |',
        f'| subprocesses they waited for, inside tests | '
        f'{sum(row["subprocess_cpu"] for row in rows):,.0f} |',
        f'| pytest and every process it waited for | {totals["waited_cpu"]:,.0f} |',
        f'| the whole machine | {_number(totals["machine_cpu"])} |', '',
        f'Operations built: {sum(row["operations"] for row in rows):,}.']


def slowest_table(run, slowest=SLOWEST):
    """Markdown lines: the slowest files of a run, with their CPU and operations."""
    lines = [
        '| file | tests | seconds | CPU, pytest | CPU, subprocesses | operations built |',
        '| --- | ---: | ---: | ---: | ---: | ---: |']
    lines += [
        f'| `{each["file"]}` | {each["tests"]} | {each["seconds"]:.0f} | {each["cpu"]:.0f} | '
        f'{each["subprocess_cpu"]:.0f} | {each["operations"]:,} |'
        for each in per_file(run['tests'])[:slowest]]
    return lines


def tiers_text(record):
    """The tables of CONTRIBUTING.md#tests, from a record of the tiers' runs."""
    tiers = [run for run in record['runs'] if 'against' not in run]
    flags = ' --against CHECKOUT' if len(tiers) < len(record['runs']) else ''
    lines = [
        f'`python benchmarks/suite_profile.py{flags}` at commit {tiers[0]["commit"]}, one tier '
        f'after the other on {_machine_line(record)}; every row of '
        '[suite_profile.json](benchmarks/results/suite_profile/suite_profile.json).', '',
        '| tier | command | tests | wall | CPU, pytest and what it waited for '
        '| CPU, whole machine |',
        '| --- | --- | --- | ---: | ---: | ---: |']
    for run in tiers:
        totals = run['totals']
        lines.append(
            f'| {run["tier"]} | `{run["command"]}` | {_counts(run)} | '
            f'{_seconds(totals["seconds"])} | {_seconds(totals["waited_cpu"])} | '
            f'{_seconds(totals["machine_cpu"])} |')
    default = tiers[-1]
    for run in record['runs']:
        if 'against' in run:
            lines += ['', (
                f'In the same sitting, just before, the default run at commit {run["commit"]} '
                f'took {_seconds(run["totals"]["seconds"])} ({_counts(run)}): this '
                f'checkout\'s takes {default["totals"]["seconds"] / run["totals"]["seconds"]:.2f}x '
                'its time.')]
    lines += ['', 'Where the default run\'s CPU went, test by test:', '']
    lines += cpu_table(default)
    lines += ['', f'The {SLOWEST} slowest files of the default run, by the sum of their tests\' '
              f'durations ({_sharing(default, record["machine"]["cores"])}, so a sum includes '
              'waiting for a core):', '']
    lines += slowest_table(default)
    return '\n'.join(lines)


def _sharing(run, cores):
    """How many pytest processes ran a run's tests on how many cores, in words."""
    processes = {row['process'] for row in run['tests']}
    return f'{len(processes)} pytest processes share {cores} cores'


def run_page(command, record):
    """The page of one run of the last form: its totals, then its slowest files."""
    (run,) = record['runs']
    lines = [
        '# Where the test suite\'s time goes', '',
        f'`{command}` at commit {run["commit"]} on {_machine_line(record)}; '
        f'{_counts(run)} in {_seconds(run["totals"]["seconds"])}.', '']
    lines += cpu_table(run)
    lines += ['', f'The {SLOWEST} slowest files, by the sum of their tests\' durations:', '']
    lines += slowest_table(run)
    return '\n'.join(lines) + '\n'


def contributing_text(record):
    """CONTRIBUTING.md with the tables the record gives between its markers."""
    from lib import reporting  # pylint: disable=import-outside-toplevel
    with open(CONTRIBUTING, encoding='utf-8') as file_:
        text = file_.read()
    return reporting.replace_block(
        text, CONTRIBUTING_MARKERS, tiers_text(record), 'CONTRIBUTING.md')


def main(argv=None):
    """Profile the tiers (or one run) and write the results; return pytest's worst exit code."""
    # Imported here: pytest processes load this module as a plugin, and
    # `reporting` imports Gymnasium.
    from lib import reporting  # pylint: disable=import-outside-toplevel

    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', default=None, help='write one run of the pytest arguments here')
    parser.add_argument('--against', default=None, help='another checkout to time first')
    parser.add_argument('--check', action='store_true',
                        help='write nothing; exit 1 if CONTRIBUTING.md is stale')
    args, pytest_args = parser.parse_known_args(argv)
    pytest_args = [arg for arg in pytest_args if arg != '--']
    results = reporting.results_dir(__file__)
    if args.check:
        path = os.path.join(results, 'suite_profile.json')
        stale = not os.path.exists(path)
        if not stale:
            with open(path, encoding='utf-8') as file_:
                expected = contributing_text(json.load(file_))
            with open(CONTRIBUTING, encoding='utf-8') as file_:
                stale = file_.read() != expected
        if stale:
            print('Stale: CONTRIBUTING.md; run python benchmarks/suite_profile.py.',
                  file=sys.stderr)
        return int(stale)
    if bool(args.out) != bool(pytest_args):
        parser.error('give both --out DIR and pytest arguments after --, or neither')
    if args.against and (args.out or not os.path.isdir(os.path.join(args.against, 'agents'))):
        parser.error('--against takes a checkout of this repository, and no --out')
    load_before = os.getloadavg()
    if args.out:
        runs = [profile(pytest_args)]
    else:
        runs = []
        if args.against:
            # Its totals and outcomes; its rows would double the results file.
            against = dict(profile([], os.path.abspath(args.against)), against=args.against)
            runs.append(dict(against, tests=[]))
        runs += [dict(profile(tier_args), tier=name, command=command)
                 for name, command, tier_args in TIERS]
    record = dict(reporting.run_record(load_before), processor=reporting.processor(), runs=runs)
    command = reporting.command_text(__file__, argv)
    if args.out:
        reporting.write_results(args.out, 'suite_profile', run_page(command, record), record)
    else:
        os.makedirs(results, exist_ok=True)
        with open(os.path.join(results, 'suite_profile.json'), 'w', encoding='utf-8') as file_:
            json.dump(record, file_)
        text = contributing_text(record)
        with open(CONTRIBUTING, 'w', encoding='utf-8') as file_:
            file_.write(text)
        print(tiers_text(record))
    return max(run['exit_code'] for run in runs)


if __name__ == '__main__':
    sys.exit(main())
