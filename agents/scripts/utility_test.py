"""Tests that the original BatchPPO's `agents.scripts.utility` names keep working."""

import numpy as np
import tensorflow as tf

from agents.scripts import environments
from agents.scripts import run_api
from agents.scripts import utility


def test_the_original_names_are_those_of_the_run_api():
    assert utility.__all__ == [
        'define_batch_env', 'define_simulation_graph', 'initialize_variables', 'load_config',
        'save_config']
    for name in utility.__all__:
        assert getattr(utility, name) is getattr(run_api, name)


def test_the_original_names_save_load_and_step_a_run(tmp_path):
    config = run_api.make_config(
        'pendulum', dict(num_agents=2, policy_layers=(8,), value_layers=(8,)))
    utility.save_config(config, str(tmp_path))
    config = utility.load_config(str(tmp_path))
    with tf.Graph().as_default():
        batch_env = utility.define_batch_env(
            environments.environment_constructors(config, config.num_agents), 'inprocess')
        graph = utility.define_simulation_graph(batch_env, config.algorithm, config)
        with tf.compat.v1.Session(config=run_api.session_config()) as sess:
            assert utility.initialize_variables(sess, None) is None
            done, score = sess.run([graph.done, graph.score], {
                graph.is_training: False, graph.should_log: False, graph.force_reset: True})
        batch_env.close()
    assert done.shape == score.shape == (2,) and np.all(np.isfinite(score))
