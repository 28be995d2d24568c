"""The suite profile: its sums, and its plugin's rows of a real pytest run."""

import collections
import json
import textwrap
import time

import pytest
import suite_profile


def _row(test, seconds, cpu=0.0, subprocess_cpu=0.0, operations=0, outcome='passed',
         process='gw0'):
    return dict(test=test, outcome=outcome, seconds=seconds, cpu=cpu,
                subprocess_cpu=subprocess_cpu, operations=operations, process=process)


def _run(rows, seconds, **keys):
    return dict(
        keys, commit='abc1234', exit_code=0, tests=rows,
        outcomes=dict(collections.Counter(row['outcome'] for row in rows)),
        totals=dict(seconds=seconds, waited_cpu=2 * seconds, machine_cpu=None))


def test_files_sum_their_tests_longest_first():
    rows = [
        _row('a_test.py::test_one', 1.0, cpu=0.5, operations=10),
        _row('b_test.py::test_one[x]', 3.0, subprocess_cpu=2.0),
        _row('a_test.py::test_two', 1.5, cpu=1.0, operations=5)]
    files = suite_profile.per_file(rows)
    assert [each['file'] for each in files] == ['b_test.py', 'a_test.py']
    assert files[1] == dict(
        file='a_test.py', tests=2, seconds=2.5, cpu=1.5, subprocess_cpu=0, operations=15)


def test_the_machines_cpu_seconds_grow_with_work():
    before = suite_profile.machine_cpu_seconds()
    if before is None:
        pytest.skip('/proc/stat is Linux only.')
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass
    assert suite_profile.machine_cpu_seconds() - before >= 0.1


def test_the_tiers_tables_give_each_tier_and_the_checkout_measured_against():
    rows = [_row('a_test.py::test_one', 1.0, operations=1234),
            _row('b_test.py::test_two', 2.0, outcome='skipped', process='gw1')]
    record = dict(
        date='2026-11-29T12:00:00', processor=dict(model='Some CPU', extensions=['avx512f']),
        machine=dict(cores=2, python='3.11.7', load_before=[0.5], load_after=[1.5]),
        runs=[_run([], 200.0, against='../old'),
              _run(rows[:1], 30.0, tier='unit', command='python -m pytest -m unit'),
              _run(rows, 100.0, tier='default', command='python -m pytest')])
    text = suite_profile.tiers_text(record)
    assert '`python benchmarks/suite_profile.py --against CHECKOUT` at commit abc1234' in text
    assert 'one tier after the other on Some CPU with AVX-512, 2 cores' in text
    assert '| unit | `python -m pytest -m unit` | 1 passed | 30 s | 60 s | not measured |' in text
    assert '| default | `python -m pytest` | 1 passed, 1 skipped | 100 s | 200 s |' in text
    assert 'the default run at commit abc1234 took 200 s' in text
    assert "this checkout's takes 0.50x its time" in text
    assert 'durations (2 pytest processes share 2 cores, so' in text
    slowest = text.index('| `b_test.py` | 1 | 2 |')
    assert slowest < text.index('| `a_test.py` | 1 | 1 | 0 | 0 | 1,234 |')


@pytest.mark.parametrize('argv, message', [
    (['--out=x'], 'give both --out DIR and pytest arguments'),
    (['--against=/nonexistent'], '--against takes a checkout of this repository'),
])
def test_bad_flags_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        suite_profile.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_contributing_states_what_the_committed_profile_gives():
    assert suite_profile.main(['--check']) == 0, 'run python benchmarks/suite_profile.py'


@pytest.mark.integration
def test_a_run_records_each_tests_operations_and_subprocess_cpu(tmp_path):
    (tmp_path / 'sample_test.py').write_text(textwrap.dedent('''\
        import subprocess
        import sys

        import pytest
        import tensorflow as tf


        def test_builds_a_graph():
            with tf.Graph().as_default():
                tf.constant(1.0) + tf.constant(2.0)


        def test_skips():
            pytest.skip('Nothing to check.')


        def test_waits_for_a_busy_subprocess():
            subprocess.run(
                [sys.executable, '-c', 'import time\\nend = time.process_time() + 0.5\\n'
                 'while time.process_time() < end: pass'], check=True)
        '''))
    out = tmp_path / 'results'
    code = suite_profile.main(
        [f'--out={out}', '--', str(tmp_path / 'sample_test.py'), '-q', f'--rootdir={tmp_path}'])
    assert code == 0
    (run,) = json.loads((out / 'suite_profile.json').read_text())['runs']
    rows = {row['test'].split('::')[1]: row for row in run['tests']}
    assert rows['test_builds_a_graph']['operations'] == 3
    assert rows['test_waits_for_a_busy_subprocess']['subprocess_cpu'] >= 0.4
    assert run['totals']['waited_cpu'] >= 0.4
    assert rows['test_skips']['outcome'] == 'skipped'
    assert rows['test_builds_a_graph']['outcome'] == 'passed'
    assert {row['process'] for row in run['tests']} == {'main'}  # No pytest-xdist here.
    page = (out / 'suite_profile.md').read_text()
    assert '2 passed, 1 skipped in' in page
    assert '| `sample_test.py` | 3 |' in page
