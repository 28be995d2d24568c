"""Fixtures shared by the hosting tests."""

import collections

import pytest

from agents.tools.envs import testing

Backend = collections.namedtuple('Backend', ('variant', 'name', 'options'))


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


@pytest.fixture(params=[
    pytest.param(
        variant, marks=[pytest.mark.slow, pytest.mark.integration] if variant == 'ray' else [])
    for variant in testing.BACKEND_VARIANTS])
def backend(request):
    """A `Backend` variant of `testing.BACKEND_VARIANTS` with its name and options.

    Checks that no worker process is left once the test closed what it built.
    On Ray, whose actors take seconds to start, the tests of the adapters are
    marked slow: the contract suite and `ray_test` check that backend by default.
    """
    name, options = testing.BACKEND_VARIANTS[request.param]
    if name == 'ray':
        request.getfixturevalue('ray_cluster')
    children = testing.child_pids()
    yield Backend(request.param, name, dict(options))
    assert not testing.new_children(children), 'worker processes were left behind'


@pytest.fixture
def build_on_backend(backend):
    """Function `make(cls, env_fns, **options)` building `cls` (an adapter) on the backend.

    What it built is closed after the test.
    """
    built = []

    def make(cls, env_fns, **options):
        built.append(cls(env_fns, backend=backend.name, **{**backend.options, **options}))
        return built[-1]

    yield make
    for each in built:
        each.close()
