import pytest

from agents.scripts import run_api
from lib import training_loop


@pytest.mark.integration
def test_the_training_phase_has_a_rate():
    config = run_api.make_config(
        'agents.scripts.train_test:tiny_pendulum', dict(rollout_length=25, gae_lambda=0.95))
    assert training_loop.measure_batchppo(config, 1, 'inprocess', steps_per_run=1) > 0
