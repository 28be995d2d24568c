import sys

import learning
import pytest


@pytest.mark.parametrize('assignment, message', [
    ('num_agent=4', "unknown key 'num_agent'"),
    ('steps=-3', 'steps must be >= 1, got -3'),
    ('steps', 'is not KEY=VALUE'),
])
def test_a_bad_set_is_refused_in_one_line_before_any_run_starts(
        assignment, message, tmp_path, monkeypatch, capsys):
    runs = tmp_path / 'runs'
    monkeypatch.setattr(sys, 'argv', [
        'learning.py', '--tasks=pendulum_novel', '--first_seed=100', f'--set={assignment}',
        f'--runs={runs}', f'--out={tmp_path}'])
    with pytest.raises(SystemExit) as exit_:
        learning.main()
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith('learning.py: error: ') and message in error
    assert not runs.exists()

