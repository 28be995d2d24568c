import json
import os
import subprocess
import sys

import pytest

from lib import phase_timing

BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = '''
import json
import os
import sys

from lib import phase_timing

if sys.argv[1:2] == ['--child']:
    print('a line before the result')
    print(json.dumps([sys.argv[2], os.environ.get('VARIANT')]))
else:
    print(json.dumps(phase_timing.run_child('pendulum,b,2', dict(VARIANT='b'))))
'''


@pytest.mark.parametrize('how', ['file', 'module'])
def test_a_child_runs_this_program_again_as_it_was_run(tmp_path, how):
    (tmp_path / 'program.py').write_text(PROGRAM)
    command = ['program.py'] if how == 'file' else ['-m', 'program']
    output = subprocess.run(
        [sys.executable, *command], cwd=tmp_path, check=True, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=BENCHMARKS)).stdout
    assert json.loads(output) == ['pendulum,b,2', 'b']


def test_the_table_puts_the_first_phase_apart_with_ratios_to_the_baseline():
    results = {'pendulum': {'a': [[4.0, 1.0, 1.0], [6.0, 1.0, 1.0]], 'b': [[2.0, 1.0, 1.0]]}}
    lines = phase_timing.table(results, ['a', 'b'], 3, 'a', 'variant').splitlines()
    assert lines[0].startswith('| config | variant | runs | first phase (s) |')
    assert lines[2] == '| pendulum | a | 2 | 5.00 | 1.00 | 7.0 | 1.00x |'
    assert lines[3] == '| pendulum | b | 1 | 2.00 | 1.00 | 4.0 | 0.57x |'


def test_the_parser_takes_the_flags_every_phase_timing_benchmark_takes():
    args = phase_timing.parser('d', 'pendulum', 'a,b', 4).parse_args(['--repeats', '3'])
    assert (args.configs, args.variants, args.repeats, args.phases, args.child) == (
        'pendulum', 'a,b', 3, 4, None)
