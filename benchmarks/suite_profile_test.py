"""The suite profile: its sums, and its plugin's rows of a real pytest run."""

import json
import textwrap
import time

import pytest
import suite_profile


def _row(test, seconds, cpu=0.0, subprocess_cpu=0.0, operations=0):
    return dict(test=test, seconds=seconds, cpu=cpu, subprocess_cpu=subprocess_cpu,
                operations=operations)


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


@pytest.mark.integration
def test_a_run_records_each_tests_operations_and_subprocess_cpu(tmp_path):
    (tmp_path / 'sample_test.py').write_text(textwrap.dedent('''\
        import subprocess
        import sys

        import tensorflow as tf


        def test_builds_a_graph():
            with tf.Graph().as_default():
                tf.constant(1.0) + tf.constant(2.0)


        def test_waits_for_a_busy_subprocess():
            subprocess.run(
                [sys.executable, '-c', 'import time\\nend = time.process_time() + 0.5\\n'
                 'while time.process_time() < end: pass'], check=True)
        '''))
    out = tmp_path / 'results'
    code = suite_profile.main(
        [f'--out={out}', '--', str(tmp_path / 'sample_test.py'), '-q', f'--rootdir={tmp_path}'])
    assert code == 0
    record = json.loads((out / 'suite_profile.json').read_text())
    rows = {row['test'].split('::')[1]: row for row in record['tests']}
    assert rows['test_builds_a_graph']['operations'] == 3
    assert rows['test_waits_for_a_busy_subprocess']['subprocess_cpu'] >= 0.4
    assert record['totals']['waited_cpu'] >= 0.4
    page = (out / 'suite_profile.md').read_text()
    assert '| `sample_test.py` | 2 |' in page
