"""Faults through both faces (`VectorEnv`, `SB3VecEnv`): the backends' errors, nothing left."""

import functools
import os

import numpy as np
import pytest

from agents.tools.envs import errors
from agents.tools.envs import testing
from agents.tools.envs import vector_env
from agents.tools.envs import waiting


@pytest.fixture(params=['gymnasium', 'sb3'])
def make_face(request, backend, build_on_backend):
    """Function of the constructors and options that builds the face on the backend."""
    if request.param == 'sb3':
        pytest.importorskip('stable_baselines3', reason="pip install -e '.[sb3]' to test it.")
        from agents.tools.envs import sb3_vec_env  # pylint: disable=import-outside-toplevel
        face_class = sb3_vec_env.SB3VecEnv
    else:
        face_class = vector_env.VectorEnv
    make = functools.partial(build_on_backend, face_class)
    make.backend = backend
    return make


def _skip_in_process(make_face):
    if make_face.backend.name == 'inprocess':
        pytest.skip(
            'Nothing can stop or survive an environment that hangs or exits in this process.')


def test_exception_in_an_environment_is_raised_as_the_backend_raises_it(make_face):
    face = make_face([functools.partial(testing.CountingEnv, fail_at_step=2)] * 2)
    face.reset()
    face.step(np.array([0, 0]))
    failure = (errors.WorkerError, ValueError)
    with pytest.raises(failure, match='step 2 failed on purpose') as caught:
        face.step(np.array([0, 0]))
    if make_face.backend.name == 'inprocess':
        assert type(caught.value) is ValueError
    else:
        assert isinstance(caught.value, errors.WorkerError)
        assert 'ValueError' in str(caught.value) and 'traceback' in str(caught.value)
    face.reset()
    np.testing.assert_array_equal(face.step(np.array([0, 0]))[0], np.ones((2, 2)))


def test_constructors_returning_one_shared_environment_are_refused(make_face):
    # Each constructor returns the same object. Where environments would share
    # it (in one process) the face is refused; elsewhere each has its own copy.
    env = testing.CountingEnv()
    try:
        face = make_face([lambda: env] * 3)
    except ValueError as error:
        assert 'are the same object' in str(error) and '\n' not in str(error)
        return
    assert make_face.backend.name != 'inprocess'
    face.reset()
    face.step(np.array([0, 0, 0]))
    assert list(face.get_attr('count')) == [1, 1, 1]


def test_crashed_environment_raises_worker_died_and_leaves_nothing_behind(make_face):
    _skip_in_process(make_face)
    before = testing.shared_memory_segments()
    face = make_face([testing.CountingEnv, functools.partial(testing.CountingEnv, exit_at_step=2)])
    segments = testing.shared_memory_segments() - before
    face.reset()
    face.step(np.array([0, 0]))
    with pytest.raises(errors.WorkerDiedError, match='exited with code 3|died'):
        face.step(np.array([0, 0]))
    assert face.batch.closed
    with pytest.raises(RuntimeError, match='closed'):
        face.reset()
    assert not testing.shared_memory_segments() & segments
    assert not any(os.path.exists(segment) for segment in segments)


# A hung reset times out as a hung step does (see contract_test.py); the faces pass both on.
@pytest.mark.parametrize('method', ['step'])
def test_hung_environment_times_out_naming_it_and_leaves_nothing_behind(make_face, method):
    _skip_in_process(make_face)
    waiting.watch_signals()  # Its pipe stays open for the process, like a module.
    fds = testing.open_fds()
    before = testing.shared_memory_segments()
    face = make_face(
        [testing.CountingEnv, functools.partial(testing.CountingEnv, hang_in=method)],
        timeout=1.0)
    segments = testing.shared_memory_segments() - before
    if method == 'step':
        face.reset()
    with pytest.raises(errors.WorkerTimeoutError, match='1.0 s') as caught:
        face.step(np.array([0, 0])) if method == 'step' else face.reset()
    message = str(caught.value)
    assert 'environment 1' in message and 'CountingEnv' in message and f'{method}()' in message
    assert face.batch.closed
    assert not any(os.path.exists(segment) for segment in segments)
    if make_face.backend.name != 'ray':  # Ray keeps connections of its own.
        face.close()
        assert testing.open_fds() <= fds
