"""Training on a goal-style task, whose Dict observation space lists its keys unsorted."""

import gymnasium
import numpy as np
import pytest

from agents.scripts import registry
from agents.scripts import run_api
from agents.scripts import train
from agents.scripts import train_test


class GoalPoint(gymnasium.Env):
    """A point that moves towards a goal, observed as goal-conditioned tasks observe it.

    The observation space is built from keyword arguments, as in Gymnasium
    Robotics, so its keys keep the order 'observation', 'desired_goal',
    'achieved_goal' rather than a sorted one. The reward is the negative
    distance to the goal.
    """

    def __init__(self):
        box = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gymnasium.spaces.Dict(
            observation=gymnasium.spaces.Box(-1.0, 1.0, (4,), np.float32),
            desired_goal=box, achieved_goal=box)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._position = self._goal = self._velocity = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._position = self.np_random.uniform(-0.5, 0.5, 2).astype(np.float32)
        self._goal = self.np_random.uniform(-0.5, 0.5, 2).astype(np.float32)
        self._velocity = np.zeros(2, np.float32)
        return self._observ(), {}

    def step(self, action):
        self._velocity = 0.1 * np.clip(action, -1.0, 1.0).astype(np.float32)
        self._position = np.clip(self._position + self._velocity, -1.0, 1.0)
        reward = -float(np.linalg.norm(self._position - self._goal))
        return self._observ(), reward, False, False, {}

    def _observ(self):
        return {
            'observation': np.concatenate([self._position, self._velocity]),
            'desired_goal': self._goal.copy(), 'achieved_goal': self._position.copy()}


@registry.register('env')
def flat_goal_point():
    """The goal task with its observations flattened into one Box, for training."""
    return gymnasium.wrappers.FlattenObservation(GoalPoint())


@registry.register('env')
def goal_point():
    """The goal task with its Dict observations, which the policy encodes itself."""
    return GoalPoint()


class TextGoal(GoalPoint):
    """The goal task with a Text part in its observations, which no encoder takes."""

    def __init__(self):
        super().__init__()
        self.observation_space = gymnasium.spaces.Dict(
            dict(self.observation_space.spaces, name=gymnasium.spaces.Text(8)))

    def _observ(self):
        return dict(super()._observ(), name='goal')


@registry.register('env')
def text_goal():
    """The goal task with a Text part, which the trainer refuses."""
    return TextGoal()


def flat_goal_config():
    config = train_test.tiny_pendulum()
    config.update(env='flat_goal_point')
    return config


def goal_config():
    config = train_test.tiny_pendulum()
    config.update(env='goal_point')
    return config


def text_goal_config():
    config = train_test.tiny_pendulum()
    config.update(env='text_goal')
    return config


def _train(config_function, logdir=None):
    return list(train.train(
        run_api.make_config(f'{__name__}:{config_function.__name__}'), logdir, 'inprocess'))


@pytest.mark.integration
def test_a_goal_task_trains_through_flatten_observation(tmp_path):
    results = _train(flat_goal_config, str(tmp_path))
    assert [(each.phase, each.step) for each in results] == [
        ('train', 400), ('eval', 400), ('train', 800), ('eval', 800)]
    assert all(np.isfinite(each.score) for each in results if each.phase == 'eval')


@pytest.mark.integration
def test_a_goal_task_trains_on_its_dict_observations(tmp_path):
    results = _train(goal_config, str(tmp_path))
    assert [(each.phase, each.step) for each in results] == [
        ('train', 400), ('eval', 400), ('train', 800), ('eval', 800)]
    assert all(np.isfinite(each.score) for each in results if each.phase == 'eval')


def test_an_observation_space_no_encoder_takes_is_refused_in_one_line_naming_it():
    with pytest.raises(Exception, match=r'Text\(') as caught:
        _train(text_goal_config)
    message = str(caught.value)
    assert '\n' not in message and 'observation space' in message, message
