"""Faults through both adapters (`VectorEnv`, `SB3VecEnv`): the backends' errors, nothing left."""

import functools
import os

import numpy as np
import pytest

from agents.tools.envs import errors
from agents.tools.envs import testing
from agents.tools.envs import vector_env
from agents.tools.envs import waiting


@pytest.fixture(params=['gymnasium', 'sb3'])
def make_adapter(request, backend, build_on_backend):
    """Function of the constructors and options that builds the adapter on the backend."""
    if request.param == 'sb3':
        pytest.importorskip('stable_baselines3', reason="pip install -e '.[sb3]' to test it.")
        from agents.tools.envs import sb3_vec_env  # pylint: disable=import-outside-toplevel
        adapter_class = sb3_vec_env.SB3VecEnv
    else:
        adapter_class = vector_env.VectorEnv
    make = functools.partial(build_on_backend, adapter_class)
    make.backend = backend
    return make


def _skip_in_process(make_adapter):
    if make_adapter.backend.name == 'inprocess':
        pytest.skip(
            'Nothing can stop or survive an environment that hangs or exits in this process.')


def test_exception_in_an_environment_is_raised_as_the_backend_raises_it(make_adapter):
    adapter = make_adapter([functools.partial(testing.CountingEnv, fail_at_step=2)] * 2)
    adapter.reset()
    adapter.step(np.array([0, 0]))
    failure = (errors.WorkerError, ValueError)
    with pytest.raises(failure, match='step 2 failed on purpose') as caught:
        adapter.step(np.array([0, 0]))
    if make_adapter.backend.name == 'inprocess':
        assert type(caught.value) is ValueError
    else:
        assert isinstance(caught.value, errors.WorkerError)
        assert 'ValueError' in str(caught.value) and 'traceback' in str(caught.value)
    adapter.reset()
    np.testing.assert_array_equal(adapter.step(np.array([0, 0]))[0], np.ones((2, 2)))


def test_constructors_returning_one_shared_environment_are_refused(make_adapter):
    # Each constructor returns the same object. Where environments would share
    # it (in one process) the adapter is refused; elsewhere each has its own copy.
    env = testing.CountingEnv()
    try:
        adapter = make_adapter([lambda: env] * 3)
    except ValueError as error:
        assert 'are the same object' in str(error) and '\n' not in str(error)
        return
    assert make_adapter.backend.name != 'inprocess'
    adapter.reset()
    adapter.step(np.array([0, 0, 0]))
    assert list(adapter.get_attr('count')) == [1, 1, 1]


def test_crashed_environment_raises_worker_died_and_leaves_nothing_behind(make_adapter):
    _skip_in_process(make_adapter)
    before = testing.shared_memory_segments()
    adapter = make_adapter(
        [testing.CountingEnv, functools.partial(testing.CountingEnv, exit_at_step=2)])
    segments = testing.shared_memory_segments() - before
    adapter.reset()
    adapter.step(np.array([0, 0]))
    with pytest.raises(errors.WorkerDiedError, match='exited with code 3|died'):
        adapter.step(np.array([0, 0]))
    assert adapter.batch.closed
    with pytest.raises(RuntimeError, match='closed'):
        adapter.reset()
    assert not testing.shared_memory_segments() & segments
    assert not any(os.path.exists(segment) for segment in segments)


# A hung reset times out as a hung step does (see contract_test.py); the adapters pass both on.
@pytest.mark.parametrize('method', ['step'])
def test_hung_environment_times_out_naming_it_and_leaves_nothing_behind(make_adapter, method):
    _skip_in_process(make_adapter)
    waiting.watch_signals()  # Its pipe stays open for the process, like a module.
    fds = testing.open_fds()
    before = testing.shared_memory_segments()
    adapter = make_adapter(
        [testing.CountingEnv, functools.partial(testing.CountingEnv, hang_in=method)],
        timeout=1.0)
    segments = testing.shared_memory_segments() - before
    if method == 'step':
        adapter.reset()
    with pytest.raises(errors.WorkerTimeoutError, match='1.0 s') as caught:
        adapter.step(np.array([0, 0])) if method == 'step' else adapter.reset()
    message = str(caught.value)
    assert 'environment 1' in message and 'CountingEnv' in message and f'{method}()' in message
    assert adapter.batch.closed
    assert not any(os.path.exists(segment) for segment in segments)
    if make_adapter.backend.name != 'ray':  # Ray keeps connections of its own.
        adapter.close()
        assert testing.open_fds() <= fds
