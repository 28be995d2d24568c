"""The PPO tests share graphs (`testing.graph`); each test module frees them when it ends."""

import pytest

from agents.algorithms.ppo import testing


@pytest.fixture(scope='module', autouse=True)
def drop_shared_graphs():
    """Frees the graphs kept for sharing once a module's tests ran."""
    yield
    testing.drop_graphs()
