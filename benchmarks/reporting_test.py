"""Tests of the helpers that every benchmark's results share."""

import argparse

import pytest
import reporting


def test_by_turns_reverses_the_order_every_other_round():
    calls = []

    def measure(name):
        calls.append(name)
        return len(calls)

    results = reporting.by_turns(['a', 'b', 'c'], 3, measure)
    assert calls == ['a', 'b', 'c', 'c', 'b', 'a', 'a', 'b', 'c']
    assert results == {'a': [1, 6, 7], 'b': [2, 5, 8], 'c': [3, 4, 9]}


def test_baseline_first_returns_the_names_in_order():
    parser = argparse.ArgumentParser()
    assert reporting.baseline_first(
        parser, 'flags', 'scripts,b,a', ('scripts', 'a', 'b')) == ['scripts', 'b', 'a']


@pytest.mark.parametrize('value', ['a,scripts', 'scripts,d'])
def test_baseline_first_refuses_in_one_line_what_the_flag_does_not_take(value, capsys):
    parser = argparse.ArgumentParser(prog='probe')
    with pytest.raises(SystemExit) as exit_:
        reporting.baseline_first(parser, 'flags', value, ('scripts', 'a', 'b'))
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == (
        f"probe: error: --flags takes scripts first, then any of scripts, a, b; got '{value}'.")
