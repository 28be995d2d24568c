"""Tests of the helpers that every benchmark's results share."""

import argparse
import glob
import os
import re
import subprocess

import pytest

from lib import reporting


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


def test_a_record_names_paths_relative_to_the_log_directory_or_the_repository():
    root = '/home/me/agents'
    assert reporting.portable('/home/me/agents/benchmarks/export_play.py', root=root) == (
        'benchmarks/export_play.py')
    assert reporting.portable(
        '--out=/home/me/agents/tools/../benchmarks/results/x.json', root=root) == (
        '--out=benchmarks/results/x.json')
    assert reporting.portable(
        '/scratch/logs/agents-hopper-0/model.ckpt-1000', logdir='/scratch/logs', root=root) == (
        'agents-hopper-0/model.ckpt-1000')
    assert reporting.portable('--checkouts=/tmp/ab/cf71d26,/home/me/agents', root=root) == (
        '--checkouts=DIR/cf71d26,.')
    assert reporting.portable('--set=policy_layers=[64,64]', root=root) == (
        '--set=policy_layers=[64,64]')
    assert reporting.portable('runs/agents-0.json', root=root) == 'runs/agents-0.json'


def test_the_command_of_a_record_is_typed_from_the_repositorys_root():
    script = os.path.join(reporting.ROOT, 'benchmarks', 'learning.py')
    assert reporting.command_text(script, ['--tasks=hopper', f'--out={reporting.ROOT}/x']) == (
        'python benchmarks/learning.py --tasks=hopper --out=x')


def test_results_files_leave_the_commit_clean(tmp_path):
    def git(*args):
        subprocess.run(['git', *args], cwd=tmp_path, check=True, capture_output=True)

    results = tmp_path / 'benchmarks' / 'results'
    results.mkdir(parents=True)
    (tmp_path / 'code.py').write_text('one\n')
    (results / 'run.json').write_text('{}\n')
    git('init', '-q')
    git('add', '.')
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'first')
    (results / 'run.json').write_text('{"score": 1}\n')
    assert not reporting.commit(str(results)).endswith('+changes')
    (tmp_path / 'code.py').write_text('two\n')
    assert reporting.commit(str(results)).endswith('+changes')


# Directories of a machine that a committed record or page must not name:
# scratch and home directories, and this checkout's own root.
_MACHINE_PATH = re.compile(
    r'(?<![\w.~:/-])/(?:work|tmp|root|home|Users|mnt|scratch)/|' + re.escape(reporting.ROOT))


def _generated_texts():
    """The committed records under benchmarks/results/ and the pages the scripts write."""
    texts = {}
    for path in glob.glob(os.path.join(reporting.ROOT, 'benchmarks', 'results', '**', '*'),
                          recursive=True):
        if os.path.isfile(path) and not path.endswith('.png'):
            with open(path, encoding='utf-8') as file_:
                texts[os.path.relpath(path, reporting.ROOT)] = file_.read()
    for page in ('docs/results.md', 'docs/configs.md'):
        with open(os.path.join(reporting.ROOT, page), encoding='utf-8') as file_:
            texts[page] = file_.read()
    for page, marker in (('README.md', 'results table'), ('CONTRIBUTING.md', 'suite tables')):
        with open(os.path.join(reporting.ROOT, page), encoding='utf-8') as file_:
            text = file_.read()
        texts[page] = re.search(rf'<!-- {marker}: .*?<!-- end of {marker} -->', text,
                                re.DOTALL).group(0)
    return texts


def test_no_record_or_generated_page_names_a_directory_of_the_machine():
    found = {name: sorted(set(_MACHINE_PATH.findall(text)))
             for name, text in _generated_texts().items()}
    assert not {name: paths for name, paths in found.items() if paths}, (
        'store paths relative to the repository or the log directory (reporting.portable)')
