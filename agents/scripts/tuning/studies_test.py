"""Tests of a tuning study on disk: it resumes only with its settings, one command at a time."""

import os

import pytest

from agents.scripts.tuning import studies
from agents.scripts.tuning.worker_test import study_settings
from agents.tools.schema import ConfigError


def test_study_resumes_only_with_its_settings_and_one_command_at_a_time(tmp_path):
    assert not studies.create_or_check(str(tmp_path), study_settings())
    assert studies.create_or_check(str(tmp_path), study_settings(command='another'))
    with pytest.raises(ConfigError, match=(
            r'^The study in .* was started with other settings: seeds \[100\] \(here '
            r'\[1, 2\]\)\. Resume it with: python -m agents.scripts.tune \.\.\.; or pass '
            r'another --logdir for a new study\.$')):
        studies.create_or_check(str(tmp_path), study_settings(seeds=[1, 2]))
    with studies.command_lock(str(tmp_path)):
        with pytest.raises(ConfigError, match=rf'^Another tune command \(process {os.getpid()}'):
            with studies.command_lock(str(tmp_path)):
                pass
    with studies.command_lock(str(tmp_path)):  # Free again.
        pass
