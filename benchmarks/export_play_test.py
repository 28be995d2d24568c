"""Tests for the export benchmark's comparison of played episodes with the run's evaluation."""

import json
import math

import export_play
import pytest


def test_welch_test_of_equal_spreads_has_the_pooled_degrees_of_freedom():
    # Scores of mean 3 and sample variance 2.5 against an evaluation of mean 4
    # whose 5 episodes have a sample variance of 2.5 (a population std of sqrt(2)).
    test = export_play.welch_test([1.0, 2.0, 3.0, 4.0, 5.0], 4.0, math.sqrt(2), 5)
    assert test['t'] == pytest.approx(-1.0)
    assert test['df'] == pytest.approx(8.0)
    assert test['p_value'] == pytest.approx(0.173297, abs=1e-5)  # Student's t, 8 df, at -1.


def test_a_played_mean_above_the_evaluation_is_never_a_fall():
    test = export_play.welch_test([5.0, 6.0, 7.0, 8.0, 9.0], 4.0, math.sqrt(2), 5)
    assert test['t'] == pytest.approx(3.0)
    assert test['p_value'] == pytest.approx(1 - 0.008536, abs=1e-5)


def test_one_rare_fall_passes_where_a_uniformly_worse_policy_fails():
    evaluation = 6880.0, 110.0, 10
    rare_fall = [6900.0] * 9 + [600.0]
    uniformly_worse = [6500.0, 6600.0] * 5
    assert export_play.welch_test(rare_fall, *evaluation)['p_value'] >= 0.01
    assert export_play.welch_test(uniformly_worse, *evaluation)['p_value'] < 0.01


@pytest.mark.parametrize('played, p_value', [(500.0, 1.0), (499.0, 0.0)])
def test_samples_without_spread_compare_their_means(played, p_value):
    assert export_play.welch_test([played] * 10, 500.0, 0.0, 10)['p_value'] == p_value


def test_a_play_names_its_training_runs_commit_and_processor(tmp_path):
    processor = {'model': 'AMD EPYC', 'extensions': ['avx2']}
    run_file = tmp_path / 'agents-hopper-0.json'
    run_file.write_text(json.dumps(dict(library='agents', commit='abc1234', processor=processor)))
    training = export_play.training_run(str(run_file))
    assert (training['commit'], training['processor']) == ('abc1234', processor)
    assert training['file'].endswith('agents-hopper-0.json')
    assert export_play.training_run(None) == dict.fromkeys(
        ('file', 'commit', 'processor'), 'not recorded')
