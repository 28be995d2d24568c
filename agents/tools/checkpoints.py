"""The checkpoints of a run: written atomically, a fixed number kept, restored with fallback.

Beside the newest checkpoints, a run keeps the checkpoint of its best
evaluation, and records that evaluation in `best.json`.
"""

import glob
import json
import math
import os
import re
import shutil
import time

from absl import logging
import tensorflow as tf

from agents.tools import graph_errors

# Name of the index file that lists the checkpoints, as TensorFlow names it.
INDEX = 'checkpoint'

# Name of the record of the best evaluation and its checkpoint.
BEST = 'best.json'


class CheckpointError(ValueError):
    """No checkpoint to restore, or none that restores."""


class Checkpoints:
    """The checkpoints of a run in one directory, named `<name>-<step>`.

    A save writes the saver's files under a temporary name, flushes them to
    disk, renames them into place (the `.index` file, which marks a complete
    checkpoint, last) and only then rewrites the index file `checkpoint`, by
    renaming a complete new one over it. So a crash while saving never leaves
    the index pointing at partial files. The index lists checkpoints in the
    order they were written; the newest `keep` are kept, and every other
    checkpoint file in the directory (older ones, leftovers of crashed saves,
    files earlier runs did not list) is deleted, so exactly `keep` remain
    however often the run resumes. `tf.train.latest_checkpoint` reads the index
    as usual.

    The checkpoint of the best evaluation, `<best_name>-<step>`, is written
    the same way and then recorded by renaming a complete new `best.json` over
    the old one; retention leaves it alone.
    """

    def __init__(self, saver, directory, keep=5, every_seconds=None, name='model.ckpt',
                 best_name='best.ckpt'):
        """Manage the checkpoints in `directory`.

        Args:
          saver: `tf.compat.v1.train.Saver` of the variables to store.
          directory: Directory of the checkpoints.
          keep: Number of checkpoints to keep.
          every_seconds: `due()` tells when this many seconds passed since the
            last save (or since creation); never if None.
          name: Prefix of the checkpoint files.
          best_name: Prefix of the files of the best evaluation's checkpoint.
        """
        if keep < 1:
            raise ValueError(f'Keep at least one checkpoint, got keep={keep}.')
        self._saver = saver
        self._directory = directory
        self._keep = keep
        self._every_seconds = every_seconds
        self._name = name
        self._best_name = best_name
        self._last_time = time.monotonic()
        self._last_path = None

    @property
    def directory(self):
        """Directory of the checkpoints."""
        return self._directory

    def due(self):
        """Whether `every_seconds` passed since the last save."""
        return (self._every_seconds is not None and
                time.monotonic() - self._last_time >= self._every_seconds)

    def save(self, sess, step):
        """Store a checkpoint of the saver's variables at `step`, then drop old ones.

        Saving the same step twice in a row writes it once.

        Args:
          sess: Session holding the variables.
          step: Global step, part of the checkpoint's name.

        Returns:
          Path prefix of the checkpoint.
        """
        path = os.path.join(self._directory, f'{self._name}-{int(step)}')
        if path == self._last_path and os.path.exists(path + '.index'):
            return path
        self._write(sess, self._name, step)
        kept = ([each for each in self.paths() if each != path] + [path])[-self._keep:]
        self._write_index(kept)
        self._delete_all_but(kept)
        self._last_time, self._last_path = time.monotonic(), path
        logging.info('Stored checkpoint %s.', path)
        return path

    def save_best(self, sess, step, score, score_std=None):
        """Keep a checkpoint as the best if its evaluation scored higher than the recorded one.

        Args:
          sess: Session holding the variables.
          step: Global step of the evaluation.
          score: Mean score of the evaluation; NaN (no episode finished) is not kept.
          score_std: Standard deviation of the evaluation's scores, recorded with it.

        Returns:
          Path prefix of the checkpoint if it is the new best, else None.
        """
        best = read_best(self._directory)
        if not math.isfinite(score) or (best is not None and score <= best['score']):
            return None
        path = self._write(sess, self._best_name, step)
        record = dict(step=int(step), score=float(score), checkpoint=os.path.basename(path))
        if score_std is not None:
            record['score_std'] = float(score_std)
        _write_atomically(
            os.path.join(self._directory, BEST), json.dumps(record, indent=2) + '\n')
        self._delete_all_but([path], self._best_name)
        logging.info('Stored checkpoint %s of the best evaluation, score %.2f.', path, score)
        return path

    def _write(self, sess, name, step):
        """Write the checkpoint `<name>-<step>` under a temporary name, then rename it into place.

        Returns:
          Its path prefix.
        """
        path = os.path.join(self._directory, f'{name}-{int(step)}')
        os.makedirs(self._directory, exist_ok=True)
        temporary = os.path.join(self._directory, f'{name}.partial-{int(step)}')
        self._saver.save(sess, temporary, write_meta_graph=False, write_state=False)
        # Data files first: the .index file marks the checkpoint as complete.
        files = sorted(glob.glob(glob.escape(temporary) + '.*'), key=lambda f: f.endswith('.index'))
        for file_ in files:
            _sync(file_)
            os.replace(file_, path + file_[len(temporary):])
        _sync(self._directory)
        return path

    def paths(self):
        """Path prefixes of the complete checkpoints, oldest first, as the index lists them.

        Without a readable index, the complete checkpoints in the directory, by step.
        """
        state = tf.train.get_checkpoint_state(self._directory)
        if state is not None:
            listed = [os.path.join(self._directory, os.path.basename(each))
                      for each in state.all_model_checkpoint_paths]
        else:
            listed = sorted(self._files_on_disk(), key=_step_of)
        return [each for each in dict.fromkeys(listed) if os.path.exists(each + '.index')]

    def check_exists(self):
        """Raise `CheckpointError` if the directory holds no complete checkpoint."""
        if not self.paths():
            raise CheckpointError(f'No checkpoint in {self._directory}.')

    def restore(self, sess, path=None):
        """Restore a checkpoint: `path`, or the newest one that restores.

        A checkpoint that does not restore (truncated, corrupt, or of another
        graph) is skipped with a warning that says why, and the next older one
        is tried.

        Args:
          sess: Session to restore the variables into.
          path: Checkpoint path prefix (or its `.index` file) to restore, without
            falling back; the newest that restores if None.

        Raises:
          CheckpointError: If there is no checkpoint, `path` does not restore, or
            none does.

        Returns:
          Path prefix of the restored checkpoint.
        """
        if path is not None:
            path = re.sub(r'\.(index|data-\d+-of-\d+)$', '', path)
            reason = self._try_restore(sess, path)
            if reason:
                raise CheckpointError(f'Cannot restore checkpoint {path}: {reason}.')
            return path
        self.check_exists()
        candidates = self.paths()[::-1]
        failures = []
        for candidate in candidates:
            reason = self._try_restore(sess, candidate)
            if not reason:
                return candidate
            logging.warning(
                'Skipping checkpoint %s, which does not restore: %s.', candidate, reason)
            failures.append(f'{os.path.basename(candidate)} ({reason})')
        raise CheckpointError(
            f'No checkpoint in {self._directory} restores: {"; ".join(failures)}.')

    def _try_restore(self, sess, path):
        """Restore `path`; the reason it failed, or None."""
        try:
            self._saver.restore(sess, path)
        except (tf.errors.OpError, ValueError) as error:
            return graph_errors.summarize(error)
        logging.info('Restored checkpoint %s.', path)
        return None

    def _write_index(self, paths):
        names = [os.path.basename(each) for each in paths]
        state = tf.compat.v1.train.generate_checkpoint_state_proto(
            self._directory, names[-1], names)
        _write_atomically(os.path.join(self._directory, INDEX), str(state))

    def _delete_all_but(self, kept, name=None):
        """Delete every file and save leftover of checkpoints `<name>-*` but those of `kept`.

        `name` is the prefix of the rotating checkpoints if None.
        """
        name = name or self._name
        kept_names = {os.path.basename(each) for each in kept}
        for entry in os.scandir(self._directory):
            prefix = re.sub(r'\.(index|data-\d+-of-\d+)$', '', entry.name)
            if prefix in kept_names or not _is_own(name, entry.name):
                continue
            if entry.is_dir():
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.remove(entry.path)

    def _files_on_disk(self):
        pattern = os.path.join(glob.escape(self._directory), glob.escape(self._name) + '-*.index')
        return [each[:-len('.index')] for each in glob.glob(pattern)]


def read_best(directory):
    """The record of a run's best evaluation, or None if it has none.

    Args:
      directory: Directory of the run's checkpoints.

    Raises:
      CheckpointError: If the record cannot be read.

    Returns:
      Dict with the `step`, `score` and `score_std` of the evaluation, and the
      path prefix of its `checkpoint`.
    """
    path = os.path.join(directory, BEST)
    try:
        with open(path) as file_:
            record = json.load(file_)
        record['checkpoint'] = os.path.join(directory, record['checkpoint'])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f'Cannot read {path}: {error}.') from None
    return record


def _is_own(name, filename):
    """Whether a file name is one of a checkpoint `<name>-<step>` or of a save's temporary files."""
    return (re.fullmatch(re.escape(name) + r'-\d+\..+', filename) is not None or
            filename.startswith(name + '.partial-'))


def _write_atomically(path, text):
    """Write a file under a temporary name, flush it, and rename it over `path`."""
    temporary = path + '.partial'
    with open(temporary, 'w') as file_:
        file_.write(text)
    _sync(temporary)
    os.replace(temporary, path)
    _sync(os.path.dirname(path) or '.')


def _step_of(path):
    return int(path.rsplit('-', 1)[1])


def _sync(path):
    """Flush a file or directory to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
