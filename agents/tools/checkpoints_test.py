"""Tests of checkpoints: atomic saves, retention across resumes, restoring with fallback."""

import os

import pytest
import tensorflow as tf

from agents.tools import checkpoints


@pytest.fixture
def session():
    """A session with one variable `value`, and a saver of it."""
    with tf.Graph().as_default():
        value = tf.compat.v1.get_variable('value', (), tf.int64, tf.zeros_initializer())
        new_value = tf.compat.v1.placeholder(tf.int64, ())
        assign = value.assign(new_value)
        saver = tf.compat.v1.train.Saver([value])
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.saver = saver
            sess.set_value = lambda number: sess.run(assign, {new_value: number})
            sess.get_value = lambda: int(sess.run(value))
            yield sess


def _store(sess, directory, **kwargs):
    return checkpoints.Checkpoints(sess.saver, str(directory), **kwargs)


def _save_steps(sess, store, steps):
    for step in steps:
        sess.set_value(step)
        store.save(sess, step)


def _files(directory):
    return sorted(os.listdir(directory))


def _names(store):
    return [os.path.basename(path) for path in store.paths()]


def test_keeps_the_newest_checkpoints_and_lists_them_in_the_index(session, tmp_path):
    store = _store(session, tmp_path, keep=3)
    _save_steps(session, store, [10, 20, 30, 40, 50])
    assert _names(store) == ['model.ckpt-30', 'model.ckpt-40', 'model.ckpt-50']
    assert _files(tmp_path) == ['checkpoint'] + [
        f'model.ckpt-{step}.{suffix}' for step in (30, 40, 50)
        for suffix in ('data-00000-of-00001', 'index')]
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / 'model.ckpt-50')
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [os.path.basename(path) for path in state.all_model_checkpoint_paths] == _names(store)


def test_retention_holds_across_resumes_and_removes_orphans(session, tmp_path):
    # Files an older run left without listing them, as TensorFlow's Saver did.
    orphans = tf.compat.v1.train.Saver(max_to_keep=None)
    for step in (1, 2, 3):
        orphans.save(session, str(tmp_path / 'model.ckpt'), step, write_meta_graph=False,
                     write_state=False)
    step = 100
    for _ in range(3):  # Each resume is a new process with its own Checkpoints.
        store = _store(session, tmp_path, keep=4)
        _save_steps(session, store, range(step, step + 6))
        step += 6
        assert len(_files(tmp_path)) == 1 + 2 * 4
        assert _names(store) == [f'model.ckpt-{each}' for each in range(step - 4, step)]


def test_a_run_resumed_from_an_older_checkpoint_continues_from_it(session, tmp_path):
    store = _store(session, tmp_path, keep=3)
    _save_steps(session, store, [10, 20, 30])
    store = _store(session, tmp_path, keep=3)
    assert store.restore(session, str(tmp_path / 'model.ckpt-10')).endswith('model.ckpt-10')
    assert session.get_value() == 10
    _save_steps(session, store, [15])
    # The newest written checkpoint is the newest, though older runs went further.
    assert _names(store) == ['model.ckpt-20', 'model.ckpt-30', 'model.ckpt-15']
    assert store.restore(session).endswith('model.ckpt-15')


@pytest.mark.parametrize('suffix', ['.data-00000-of-00001', '.index'])
def test_a_truncated_newest_checkpoint_falls_back_to_the_previous(
        session, tmp_path, suffix, caplog):
    store = _store(session, tmp_path)
    _save_steps(session, store, [10, 20, 30])
    path = tmp_path / f'model.ckpt-30{suffix}'
    content = path.read_bytes()
    path.write_bytes(content[:len(content) // 2])
    session.set_value(0)
    with caplog.at_level('WARNING'):
        assert store.restore(session).endswith('model.ckpt-20')
    assert session.get_value() == 20
    (warning,) = [record.getMessage() for record in caplog.records
                  if record.levelname == 'WARNING' and 'Skipping' in record.getMessage()]
    assert f'Skipping checkpoint {tmp_path}/model.ckpt-30, which does not restore: ' in warning
    assert 'Error: ' in warning and '\n' not in warning


def test_no_checkpoint_that_restores_is_a_clear_error(session, tmp_path):
    store = _store(session, tmp_path)
    with pytest.raises(checkpoints.CheckpointError, match='No checkpoint in'):
        store.restore(session)
    _save_steps(session, store, [10, 20])
    for step in (10, 20):
        (tmp_path / f'model.ckpt-{step}.data-00000-of-00001').write_bytes(b'garbage')
    with pytest.raises(checkpoints.CheckpointError,
                       match=r'No checkpoint in .* restores: model.ckpt-20 \(.*\); '
                             r'model.ckpt-10 \(.*\)\.'):
        store.restore(session)


def test_a_chosen_checkpoint_is_restored_or_refused(session, tmp_path):
    store = _store(session, tmp_path)
    _save_steps(session, store, [10, 20])
    assert store.restore(session, str(tmp_path / 'model.ckpt-10.index')).endswith('ckpt-10')
    assert session.get_value() == 10
    with pytest.raises(checkpoints.CheckpointError, match='Cannot restore checkpoint .*ckpt-15'):
        store.restore(session, str(tmp_path / 'model.ckpt-15'))


def test_a_crash_while_saving_leaves_the_index_on_the_previous_checkpoint(
        session, tmp_path, monkeypatch):
    store = _store(session, tmp_path)
    _save_steps(session, store, [10])
    real_replace = os.replace

    def crash_after_the_data_file(source, target):
        real_replace(source, target)
        raise KeyboardInterrupt('killed while saving')

    monkeypatch.setattr(os, 'replace', crash_after_the_data_file)
    session.set_value(20)
    with pytest.raises(KeyboardInterrupt):
        store.save(session, 20)
    monkeypatch.setattr(os, 'replace', real_replace)
    assert os.path.exists(tmp_path / 'model.ckpt-20.data-00000-of-00001')
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith('model.ckpt-10')
    store = _store(session, tmp_path)
    assert store.restore(session).endswith('model.ckpt-10') and session.get_value() == 10
    _save_steps(session, store, [30])  # The next save removes the partial files.
    assert _files(tmp_path) == ['checkpoint'] + [
        f'model.ckpt-{step}.{suffix}' for step in (10, 30)
        for suffix in ('data-00000-of-00001', 'index')]


def test_an_unreadable_index_falls_back_to_the_checkpoints_on_disk(session, tmp_path):
    store = _store(session, tmp_path)
    _save_steps(session, store, [10, 30, 20])
    (tmp_path / 'checkpoint').write_text('not a checkpoint state {')
    assert _names(store) == ['model.ckpt-10', 'model.ckpt-20', 'model.ckpt-30']
    assert store.restore(session).endswith('model.ckpt-30')


def test_saving_one_step_twice_writes_it_once_and_due_follows_the_clock(session, tmp_path):
    store = _store(session, tmp_path, every_seconds=3600)
    assert not store.due()
    store.save(session, 10)
    modified = os.path.getmtime(tmp_path / 'model.ckpt-10.index')
    assert store.save(session, 10).endswith('model.ckpt-10')
    assert os.path.getmtime(tmp_path / 'model.ckpt-10.index') == modified
    assert _store(session, tmp_path, every_seconds=0).due()
    assert not _store(session, tmp_path).due()


def _best_files(directory):
    return [name for name in _files(directory) if name.startswith('best')]


def test_the_best_evaluation_keeps_its_checkpoint_apart_from_retention(session, tmp_path):
    store = _store(session, tmp_path, keep=2)
    assert checkpoints.read_best(str(tmp_path)) is None
    for step, score in ((10, -5.0), (20, 3.0), (30, float('nan')), (40, 3.0), (50, 1.0)):
        session.set_value(step)
        store.save_best(session, step, score, score_std=0.5)
        store.save(session, step)
    assert _names(store) == ['model.ckpt-40', 'model.ckpt-50']
    best = checkpoints.read_best(str(tmp_path))
    assert best == dict(
        step=20, score=3.0, score_std=0.5, checkpoint=str(tmp_path / 'best.ckpt-20'))
    assert _best_files(tmp_path) == [
        'best.ckpt-20.data-00000-of-00001', 'best.ckpt-20.index', 'best.json']
    assert store.restore(session, best['checkpoint']) and session.get_value() == 20
    # A resumed run beats the recorded best only with a higher score.
    store = _store(session, tmp_path, keep=2)
    session.set_value(60)
    assert store.save_best(session, 60, 2.0) is None
    assert store.save_best(session, 60, 4.0) == str(tmp_path / 'best.ckpt-60')
    assert _best_files(tmp_path) == [
        'best.ckpt-60.data-00000-of-00001', 'best.ckpt-60.index', 'best.json']


def test_a_crash_while_saving_the_best_keeps_the_previous_best(session, tmp_path, monkeypatch):
    store = _store(session, tmp_path)
    session.set_value(10)
    store.save_best(session, 10, 1.0)
    real_replace = os.replace

    def crash_before_the_record(source, target):
        if target.endswith(checkpoints.BEST):
            raise KeyboardInterrupt('killed while saving')
        real_replace(source, target)

    monkeypatch.setattr(os, 'replace', crash_before_the_record)
    session.set_value(20)
    with pytest.raises(KeyboardInterrupt):
        store.save_best(session, 20, 2.0)
    monkeypatch.setattr(os, 'replace', real_replace)
    best = checkpoints.read_best(str(tmp_path))
    assert best['step'] == 10
    assert store.restore(session, best['checkpoint']) and session.get_value() == 10
    (tmp_path / checkpoints.BEST).write_text('{"step": 10')
    with pytest.raises(checkpoints.CheckpointError, match='Cannot read .*best.json'):
        checkpoints.read_best(str(tmp_path))
