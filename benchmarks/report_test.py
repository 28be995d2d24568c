"""Tests of the results page: it is what the run files give, and its statistics are right."""

import glob
import json
import os
import re

from lib import learning_tasks
from lib import run_files
import numpy as np
import pytest
import report


def _run(task, seed, finals, library='agents'):
    """A run file's contents whose evaluations score `finals` in turn."""
    return dict(library=library, task=task, seed=seed, evaluations=[
        [50_000 * (index + 1), score, 1.0] for index, score in enumerate(finals)])


@pytest.fixture(scope='module')
def committed_runs():
    return run_files.load_runs()


@pytest.fixture(scope='module')
def page(committed_runs):
    return report.page(committed_runs, report.load_export_plays())


def test_the_committed_page_and_readme_table_are_what_the_run_files_give(committed_runs, page):
    with open(report.PAGE) as file_:
        assert file_.read() == page, 'docs/results.md is stale: run python benchmarks/report.py'
    with open(report.README) as file_:
        readme = file_.read()
    assert readme == report.readme_text(readme, committed_runs), (
        'The README results table is stale: run python benchmarks/report.py')


def _result_figures(page):
    """The figures of the page's result rows from 1,000 up, as the page writes them.

    Shorter numbers, such as 500 or 938, are too common to be told from other figures.
    """
    anchors = {f'{anchor.score:,}' for anchors in report.ANCHORS.values() for anchor in anchors}
    figures = set()
    for line in page.splitlines():
        cells = line.strip('|').split('|')
        if line.startswith('| ') and len(cells) > 3 and 'published by' not in line:
            figures.update(re.findall(r'-?\d{1,3}(?:,\d{3})+', '|'.join(cells[2:])))
    return figures - anchors


def _pages_that_link_to_the_results():
    """README.md outside its generated table, docs/, CHANGELOG.md and benchmarks/README.md."""
    with open(report.README) as file_:
        readme = file_.read()
    begin, end = (readme.index(marker) for marker in report.README_MARKERS)
    texts = {'README.md': readme[:begin] + readme[end:]}
    paths = [os.path.join(report.ROOT, 'CHANGELOG.md'),
             os.path.join(report.ROOT, 'benchmarks', 'README.md'),
             *glob.glob(os.path.join(report.ROOT, 'docs', '**', '*.md'), recursive=True)]
    for path in paths:
        if path != report.PAGE:
            with open(path) as file_:
                texts[os.path.relpath(path, report.ROOT)] = file_.read()
    return texts


def test_no_other_page_copies_a_figure_of_the_results_page(page):
    # The folders of benchmarks/results/ keep the records of their own runs and
    # of the decisions; the pages a reader starts from link to the results.
    figures = _result_figures(page)
    assert figures, 'the page has no figures to look for'
    copies = {
        name: sorted(figure for figure in figures
                     if re.search(rf'(?<![\d,.]){re.escape(figure)}(?![\d,])', text))
        for name, text in _pages_that_link_to_the_results().items()}
    assert not {name: found for name, found in copies.items() if found}, (
        'link to docs/results.md instead of copying its figures')


def test_the_page_stays_short(page):
    assert page.count('\n') <= 300


def test_the_interval_of_a_mean_holds_it_and_repeats():
    scores = [10.0, 12.0, 9.0, 30.0, 11.0, 10.5, 9.5, 12.5, 11.5, 10.0]
    mean, low, high = report.interval(scores, 'mean')
    assert mean == pytest.approx(np.mean(scores))
    assert low < mean < high
    assert report.interval(scores, 'mean') == (mean, low, high)


def test_the_interquartile_mean_leaves_out_the_outer_quarters():
    scores = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1000.0]
    iqm, low, high = report.interval(scores, 'iqm')
    # scipy's trim_mean cuts int(0.25 * 10) = 2 runs at each end.
    assert iqm == pytest.approx(np.mean([2.0, 3.0, 4.0, 5.0, 6.0, 7.0]))
    assert low <= iqm <= high


def test_the_mujoco_row_counts_seeds_at_target_and_the_exported_policies():
    runs = [_run('hopper', seed, [1000.0, final]) for seed, final in
            enumerate([3400.0, 3300.0, 3372.0])]
    plays = {('hopper', 0): dict(mean_score=3000.0, checkpoint='run/model.ckpt-100000'),
             ('hopper', 1): dict(mean_score=9.0, checkpoint='run/model.ckpt-50000'),
             ('hopper', 2): dict(mean_score=3500.0, checkpoint='run/model.ckpt-100000')}
    (row,) = report.mujoco_table(runs, plays)[2:]
    cells = [cell.strip() for cell in row.strip('|').split('|')]
    assert cells[0] == 'Hopper-v5'
    assert cells[1] == '3'
    assert cells[5] == '2 of 3'  # 3,400 and 3,372 reach the target of 3,372.
    assert cells[6] == '3,250 (2 runs)'  # Seed 1's play is of an earlier checkpoint.


def test_best_so_far_is_each_runs_best_evaluation_averaged():
    runs = [_run('cheetah', 0, [6000.0, 5000.0]), _run('cheetah', 1, [4000.0, 7000.0])]
    (row,) = report.mujoco_table(runs, {})[2:]
    assert row.split('|')[5].strip() == '6,500'  # (6,000 + 7,000) / 2.


def test_a_table_names_the_commits_and_processors_of_its_runs():
    processor = {'model': 'AMD EPYC', 'extensions': ['avx', 'avx2', 'avx512f']}
    recorded = [dict(_run('cheetah', seed, [1.0], library), commit='abc1234', processor=processor)
                for seed, library in enumerate(['agents', 'agents-feedforward'])]
    assert report.provenance(recorded) == 'commit abc1234, AMD EPYC (AVX-512)'
    unrecorded = _run('cheetah', 2, [1.0], 'sb3')
    assert report.provenance([*recorded, unrecorded]) == (
        'commit abc1234, AMD EPYC (AVX-512) for agents and agents-feedforward; '
        'commit and processor not recorded for sb3')
    without_processor = dict(_run('cheetah', 3, [1.0], 'sb3'), commit='def5678')
    assert report.provenance([recorded[0], without_processor]) == (
        'commit abc1234, AMD EPYC (AVX-512) for agents; '
        'commit def5678, processor not recorded for sb3')


def test_steps_to_threshold_need_every_seed_to_reach_it():
    reached = [_run('cartpole', seed, [200.0, 500.0]) for seed in range(2)]
    short = reached + [_run('cartpole', 2, [200.0, 300.0])]
    assert report.peer_table(reached, ['cartpole'], ['agents'])[2].endswith(
        '| 2 of 2 | 100k | - |')
    assert report.peer_table(short, ['cartpole'], ['agents'])[2].endswith('| 2 of 3 | - | - |')


def test_peak_memory_is_the_highest_sample_of_any_run():
    runs = [dict(library='agents', task='hopper', seed=seed, evaluations=[
        [50_000, 1.0, 1.0, first], [100_000, 2.0, 2.0, last]])
        for seed, (first, last) in enumerate([(900.0, 910.2), (1020.4, 950.0)])]
    (row,) = report.mujoco_table(runs, {})[2:]
    assert row.split('|')[9].strip() == '1,020 MiB'
    assert report.peak_memory([_run('hopper', 0, [1.0])]) == '-'


def test_a_readme_without_the_markers_is_refused():
    with pytest.raises(ValueError, match='markers'):
        report.readme_text('# agents\n', [])


def test_trpo_runs_stand_beside_ours_and_raise_a_target_they_beat(tmp_path):
    runs = [dict(_run('hopper', seed, [1000.0, final]), commit='abc1234')
            for seed, final in enumerate([3300.0, 3400.0, 3500.0])]
    for seed, final in enumerate([3600.0, 3700.0, 3800.0]):
        with open(tmp_path / f'sb3-trpo-hopper-{seed}.json', 'w') as file_:
            json.dump(dict(_run('hopper', seed, [900.0, final], 'sb3-trpo'), seconds=1.0), file_)
    runs += run_files.load_runs(str(tmp_path))
    header, _, ours, trpo = report.mujoco_table(runs, {})
    assert header.startswith('| task | library | seeds |')
    assert ours.startswith('| Hopper-v5 | agents | 3 | 3,400 [')
    cells = [cell.strip() for cell in trpo.strip('|').split('|')]
    assert cells[:3] == ['Hopper-v5', 'sb3-trpo', '3']
    assert cells[3].startswith('3,700 [')  # The mean, with the same interval as ours.
    assert cells[6:] == ['2 of 3', '-', '3,700', '-']  # TRPO's mean beats the published 3,372.
    assert report.target('hopper', runs).source == "sb3-contrib TRPO's mean of 3 seeds run here"
    page = report.page(runs, {})
    assert '--tasks=hopper --seeds=3 --no-sb3 --trpo' in page
    assert '| Hopper-v5 | sb3-trpo | 3 |' in page


def test_a_target_is_a_final_score_of_3_or_more_seeds():
    # Tianshou's best-so-far 5,784 and the zoo's single run of 5,819 set no target.
    assert report.target('cheetah', []) == report.Target(
        1803, "sb3-contrib TRPO's published mean of 3 seeds on v3")
    two_trpo_runs = [_run('hopper', seed, [9000.0], 'sb3-trpo') for seed in range(2)]
    assert report.target('hopper', two_trpo_runs).score == 3372



def test_the_pages_state_how_evaluation_is_seeded_in_the_same_sentence(page):
    pages = {'docs/results.md': page}
    for name in ('docs/training.md', 'docs/tuning.md'):
        with open(os.path.join(report.ROOT, name)) as file_:
            pages[name] = file_.read()
    missing = [name for name, text in pages.items()
               if learning_tasks.EVALUATION not in ' '.join(text.split())]
    assert not missing, 'state benchmarks/tasks.py\'s evaluation sentence as it stands'


def test_changelog_entries_are_one_short_line_each():
    with open(os.path.join(report.ROOT, 'CHANGELOG.md')) as file_:
        long = [line for line in file_.read().splitlines()
                if line.startswith('- ') and len(line) - 2 > 120]
    assert not long, 'keep each CHANGELOG.md entry to 120 characters after its "- "'


def test_no_docs_page_names_an_issue():
    named = {}
    for path in glob.glob(os.path.join(report.ROOT, 'docs', '**', '*.md'), recursive=True):
        with open(path) as file_:
            found = re.findall(r'\bissues? #?\d+|#\d+\b', file_.read(), re.IGNORECASE)
        if found:
            named[os.path.relpath(path, report.ROOT)] = found
    assert not named, 'state the design; what an issue asked goes in the decisions record'


def test_popgym_rows_and_the_suite_iqm_appear_once_its_runs_exist():
    runs = []
    for task in learning_tasks.POPGYM_TASKS:
        for seed in range(2):
            runs.append(dict(_run(task, seed, [0.0, 0.5 + 0.1 * seed]), seconds=300.0))
            runs.append(dict(
                _run(task, seed, [0.0, -0.5]), library=learning_tasks.CONTROL, seconds=120.0))
    runs += [dict(_run('repeat_previous_easy', seed, [0.1]), library='sb3', seconds=1200.0)
             for seed in range(2)]
    assert not report.popgym_section([run for run in runs if run['task'] == 'pendulum'])
    section = '\n'.join(report.popgym_section(runs))
    assert '| popgym-RepeatPreviousEasy-v0 | agents | 2 | 0.550 [' in section
    assert '| 0.550 | 5.0 min | 0.744 (SPARC PPO-GRU (published, 4M steps, 3 seeds)) |' in (
        section)
    assert '| popgym-RepeatPreviousEasy-v0 | sb3 | 2 | 0.100 [0.100, 0.100] at 50k steps |' in (
        section)
    assert '- agents: IQM 0.550 [' in section and '12 tasks and 2 seeds each' in section
    assert '- agents-feedforward: IQM -0.500 [-0.500, -0.500]' in section
    assert '- sb3' not in section  # It ran two tasks of the suite.
