"""Fixtures shared by the hosting tests."""

import pytest


@pytest.fixture(scope='package')
def ray_cluster():
    """A local Ray instance with two CPUs, started once for the hosting tests."""
    ray = pytest.importorskip('ray', reason="pip install -e '.[ray]' to test the Ray backend.")
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started_here:
        ray.shutdown()
