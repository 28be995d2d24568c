"""A tiny run on a POPGym task: integer observations, MultiDiscrete actions, the previous action."""

import os

import numpy as np
import pytest
import tensorflow as tf

from agents.scripts import configs
from agents.scripts import run_api
from agents.scripts import train
from agents.scripts.serving import saved_policy

pytest.importorskip('popgym')


def tiny_mine_sweeper():
    """The popgym config on MineSweeperEasy, observing its previous action, made small."""
    config = configs.popgym()
    config.update(
        env='popgym:popgym-MineSweeperEasy-v0', previous_action=True, num_agents=4,
        rollout_length=32, chunk_length=16, batch_size=2, steps=256, eval_every=128,
        eval_episodes=2, policy_layers=(16,), value_layers=(16,), update_epochs=1)
    return config


@pytest.mark.integration
def test_a_popgym_task_trains_resumes_and_exports_a_policy_of_its_spaces(tmp_path):
    logdir = str(tmp_path / 'run')
    config = run_api.make_config(f'{__name__}:tiny_mine_sweeper')
    run_api.save_config(config, logdir)
    first = list(train.train(config, logdir, 'inprocess'))
    assert [(each.phase, each.step) for each in first] == [
        ('train', 128), ('eval', 128), ('train', 256), ('eval', 256)]
    assert all(-1 <= each.score <= 1 for each in first if each.phase == 'eval')
    with config.unlocked():
        config.update(steps=384)
    resumed = list(train.train(config, logdir, 'inprocess', resume=True))
    assert [(each.phase, each.step) for each in resumed] == [('train', 384), ('eval', 384)]
    outdir = str(tmp_path / 'policy')
    description = saved_policy.export(config, logdir, outdir)
    inputs = description['signatures']['serving_default']['inputs']
    assert inputs['observ_0']['dtype'].startswith('int') and inputs['observ_1']['shape'] == [
        None, 2]
    # Loaded into a graph of its own: the suite's processes may have left eager execution.
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        meta_graph = tf.compat.v1.saved_model.load(sess, [tf.saved_model.SERVING], outdir)
        signatures = meta_graph.signature_def
        state = sess.run(
            _tensors(signatures['initial_state'].outputs),
            {signatures['initial_state'].inputs['batch_size'].name: 3})
        serving = signatures['serving_default']
        # The first step of an episode: an observation and the null previous action.
        feed = {serving.inputs['observ_0'].name: [0, 1, 2],
                serving.inputs['observ_1'].name: [[4, 4]] * 3}
        feed.update({serving.inputs[name].name: value for name, value in state.items()})
        action = sess.run(serving.outputs['action'].name, feed)
    assert action.shape == (3, 2) and np.all((0 <= action) & (action < 4))
    assert os.path.exists(os.path.join(outdir, 'saved_model.pb'))


def _tensors(infos):
    """The tensor names of a signature's inputs or outputs, by key."""
    return {key: info.name for key, info in infos.items()}
