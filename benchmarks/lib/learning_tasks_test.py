import pytest

from agents.scripts import run_api
from lib import learning_tasks


def test_a_runs_config_follows_the_tasks_protocol():
    task = learning_tasks.TASKS['pendulum_novel']
    config = learning_tasks.run_config(task, 3, {'num_agents': 4})
    assert (config.env, config.seed, config.steps, config.eval_every) == (
        'Pendulum-v1', 3, task.budget, task.eval_every)
    assert config.eval_episodes == learning_tasks.EVAL_EPISODES
    assert tuple(config.observation_mask) == task.mask
    assert config.num_agents == 4


def test_a_runs_config_can_be_the_control_of_its_task():
    task = learning_tasks.TASKS['cartpole_novel']
    config = learning_tasks.run_config(task, 0, config_name=task.control)
    assert config.env == 'CartPole-v1' and tuple(config.observation_mask) == task.mask


@pytest.mark.parametrize('overrides, message', [
    ({'num_agent': 4}, "unknown key 'num_agent'"),
    ({'steps': -1}, 'steps must be >= 1'),
])
def test_overrides_go_through_the_schema(overrides, message):
    with pytest.raises(run_api.ConfigError, match=message):
        learning_tasks.run_config(learning_tasks.TASKS['pendulum'], 100, overrides)


def test_the_evaluation_protocol_is_one_paragraph_of_the_modules_docstring():
    assert learning_tasks.EVALUATION.startswith('Evaluation plays new episodes')
    assert '\n' not in learning_tasks.EVALUATION
    assert learning_tasks.EVALUATION.endswith('use separately seeded environments.')


def test_every_peer_task_has_its_settings_and_every_control_a_config():
    for name, task in learning_tasks.TASKS.items():
        assert task.config and task.env, name
        if task.peer_minutes:
            assert task.sb3, name
    assert set(learning_tasks.TRPO) <= set(learning_tasks.MUJOCO_TASKS)
    assert set(learning_tasks.POPGYM_TASKS) <= set(learning_tasks.TASKS)


def test_a_title_names_the_hidden_entries():
    assert learning_tasks.title(learning_tasks.TASKS['pendulum']) == 'Pendulum-v1'
    assert learning_tasks.title(learning_tasks.TASKS['cartpole_novel']) == (
        'CartPole-v1, observation entries 1, 3 hidden')
