"""Tests of reading the tune command's space file."""

import pytest

from agents.scripts.tuning import space_file
from agents.tools.schema import ConfigError


def test_a_space_file_reads_as_yaml_or_json(tmp_path):
    (tmp_path / 'space.yaml').write_text('learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}\n')
    (tmp_path / 'space.json').write_text('{"update_epochs": {"low": 3, "high": 20}}')
    assert space_file.load(str(tmp_path / 'space.yaml')) == {
        'learning_rate': dict(low=1e-5, high=1e-3, log=True)}
    assert space_file.load(str(tmp_path / 'space.json')) == {
        'update_epochs': dict(low=3, high=20)}


def test_a_missing_space_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match='Cannot read the space file .*: No such file'):
        space_file.load(str(tmp_path / 'missing.yaml'))


@pytest.mark.parametrize('text, message', [
    ('learning_rate: [', 'Cannot parse the space file'),
    ('- learning_rate', 'must map config keys to {low, high} or {choices}'),
])
def test_unreadable_space_file_is_refused(tmp_path, text, message):
    (tmp_path / 'space.yaml').write_text(text)
    with pytest.raises(ConfigError, match=message.replace('{', r'\{').replace('}', r'\}')):
        space_file.load(str(tmp_path / 'space.yaml'))
