"""Tests of the shipped configs' choices that depend on their tasks."""

import gymnasium as gym
import pytest

from agents.scripts import configs


def test_ant_hides_exactly_the_contact_forces():
    pytest.importorskip('mujoco')
    env = gym.make('Ant-v5')
    structure, size = env.unwrapped.observation_structure, env.observation_space.shape[0]
    env.close()
    start = structure['qpos'] + structure['qvel']
    assert configs.ant()['observation_mask'] == tuple(
        range(start, start + structure['cfrc_ext']))
    assert start + structure['cfrc_ext'] == size
