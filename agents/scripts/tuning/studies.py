"""The study of the tune command on disk: an Optuna study in SQLite, its settings and locks.

A study directory holds `study.db` (the Optuna study: every trial, its
parameters, evaluations and state), the run directories of the trials, and
lock files. The settings that define what a trial measures (base config,
steps, seeds, search space, averaged evaluations, steps between reports) and
which trials the study samples (the sampler's seed) are recorded in the study
when it starts, so a later command resumes only a study of the same settings.
One command at a time works on a study: it holds `tune.lock`, and its worker
processes inherit it.
"""

import contextlib
import fcntl
import os

import optuna

from agents.tools.schema import ConfigError

DATABASE = 'study.db'
STUDY_NAME = 'tune'

# Settings that define what a trial measures and which trials are sampled; a
# study resumes only with the same.
MEASURED = (
    'config', 'steps', 'seeds', 'last_evals', 'report_every', 'space', 'sampler_seed')

# The tune command says in its own lines what the study does.
optuna.logging.set_verbosity(optuna.logging.WARNING)


def storage(logdir):
    """The Optuna storage of the study in `logdir`: SQLite, shared by the worker processes."""
    path = os.path.abspath(os.path.join(os.path.expanduser(logdir), DATABASE))
    # Workers write to the file by turns; one waits for another's write to end.
    return optuna.storages.RDBStorage(
        f'sqlite:///{path}', engine_kwargs=dict(connect_args=dict(timeout=300)))


def open_study(logdir, sampler=None, pruner=None):
    """Load the study in `logdir`, sampling and pruning with these."""
    return optuna.load_study(
        study_name=STUDY_NAME, storage=storage(logdir), sampler=sampler, pruner=pruner)


def create_or_check(logdir, settings):
    """Create the study in `logdir` with these settings, or check those of the one there.

    Args:
      logdir: Study directory.
      settings: Dict of the study's settings: the keys of `MEASURED`, and
        `command`, the command line that started it.

    Raises:
      ConfigError: If the study there measures trials otherwise.

    Returns:
      Whether the study existed.
    """
    study = optuna.create_study(
        study_name=STUDY_NAME, storage=storage(logdir), direction='maximize',
        load_if_exists=True)
    recorded = study.user_attrs.get('settings')
    if recorded is None:
        study.set_user_attr('settings', settings)
        return False
    changed = [
        f'{name} {_describe(recorded.get(name))} (here {_describe(settings[name])})'
        for name in MEASURED if recorded.get(name) != settings[name]]
    if changed:
        raise ConfigError(
            f'The study in {logdir} was started with other settings: {"; ".join(changed)}. '
            f'Resume it with: {recorded["command"]}; or pass another --logdir for a new study.')
    return True


def settings_of(study):
    """The settings recorded when the study started."""
    return study.user_attrs['settings']


@contextlib.contextmanager
def command_lock(logdir):
    """Hold the study's command lock, so that no other command works on it meanwhile.

    Worker processes that inherit the yielded descriptor hold the lock with
    this process until they exit.

    Raises:
      ConfigError: If another command holds the lock.

    Yields:
      The file descriptor of the lock.
    """
    path = os.path.join(logdir, 'tune.lock')
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 64, 0).decode(errors='replace').strip()
            raise ConfigError(
                f'Another tune command (process {holder or "unknown"}) is working on the '
                f'study in {logdir}; wait for it to end or stop it.') from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, str(os.getpid()).encode(), 0)
        yield descriptor
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def trials_lock(logdir):
    """Hold the lock under which a worker of the command chooses its next trial."""
    with open(os.path.join(logdir, 'trials.lock'), 'a') as file_:
        fcntl.flock(file_, fcntl.LOCK_EX)
        yield


def _describe(value):
    return 'unset' if value is None else repr(value)
