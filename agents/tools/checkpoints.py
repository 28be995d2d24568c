"""The checkpoints of a run: written atomically, a fixed number kept, restored with fallback."""

import glob
import os
import re
import shutil
import time

from absl import logging
import tensorflow as tf

from agents.tools import graph_errors

# Name of the index file that lists the checkpoints, as TensorFlow names it.
INDEX = 'checkpoint'


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
    """

    def __init__(self, saver, directory, keep=5, every_seconds=None, name='model.ckpt'):
        """Manage the checkpoints in `directory`.

        Args:
          saver: `tf.compat.v1.train.Saver` of the variables to store.
          directory: Directory of the checkpoints.
          keep: Number of checkpoints to keep.
          every_seconds: `due()` tells when this many seconds passed since the
            last save (or since creation); never if None.
          name: Prefix of the checkpoint files.
        """
        if keep < 1:
            raise ValueError(f'Keep at least one checkpoint, got keep={keep}.')
        self._saver = saver
        self._directory = directory
        self._keep = keep
        self._every_seconds = every_seconds
        self._name = name
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
        os.makedirs(self._directory, exist_ok=True)
        temporary = os.path.join(self._directory, f'{self._name}.partial-{int(step)}')
        self._saver.save(sess, temporary, write_meta_graph=False, write_state=False)
        # Data files first: the .index file marks the checkpoint as complete.
        files = sorted(glob.glob(glob.escape(temporary) + '.*'), key=lambda f: f.endswith('.index'))
        for file_ in files:
            _sync(file_)
            os.replace(file_, path + file_[len(temporary):])
        _sync(self._directory)
        kept = ([each for each in self.paths() if each != path] + [path])[-self._keep:]
        self._write_index(kept)
        self._delete_all_but(kept)
        self._last_time, self._last_path = time.monotonic(), path
        logging.info('Stored checkpoint %s.', path)
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
        candidates = self.paths()[::-1]
        if not candidates:
            raise CheckpointError(f'No checkpoint in {self._directory}.')
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
        index = os.path.join(self._directory, INDEX)
        temporary = index + '.partial'
        with open(temporary, 'w') as file_:
            file_.write(str(state))
        _sync(temporary)
        os.replace(temporary, index)
        _sync(self._directory)

    def _delete_all_but(self, kept):
        """Delete every checkpoint file and leftover of a save except those of `kept`."""
        kept_names = {os.path.basename(each) for each in kept}
        for entry in os.scandir(self._directory):
            prefix = re.sub(r'\.(index|data-\d+-of-\d+)$', '', entry.name)
            if prefix in kept_names or not self._is_own(entry.name):
                continue
            if entry.is_dir():
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.remove(entry.path)

    def _is_own(self, filename):
        """Whether a file name is one of a checkpoint or of a save's temporary files."""
        return (re.fullmatch(re.escape(self._name) + r'-\d+\..+', filename) is not None or
                filename.startswith(self._name + '.partial-'))

    def _files_on_disk(self):
        pattern = os.path.join(glob.escape(self._directory), glob.escape(self._name) + '-*.index')
        return [each[:-len('.index')] for each in glob.glob(pattern)]


def _step_of(path):
    return int(path.rsplit('-', 1)[1])


def _sync(path):
    """Flush a file or directory to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
