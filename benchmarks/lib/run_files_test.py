import json
import os

from lib import reporting
from lib import run_files

EVALUATIONS = [[5_000, -900.0, 10.0], [10_000, -300.0, 20.0], [15_000, -150.0, 30.0]]


def test_the_score_at_a_step_is_the_nearest_evaluations():
    assert run_files.score_at(EVALUATIONS, 9_000) == -300.0
    assert run_files.score_at(EVALUATIONS, 100_000) == -150.0


def test_the_first_evaluation_reaching_a_threshold():
    assert run_files.first_reaching(EVALUATIONS, -200.0) == EVALUATIONS[2]
    assert run_files.first_reaching(EVALUATIONS, 0.0) is None


def test_steps_read_short():
    assert run_files.short_steps(25_000) == '25k'
    assert run_files.short_steps(1_000_000) == '1M'
    assert run_files.short_steps(1_500_000) == '1.5M'


def test_runs_load_sorted_by_library_task_and_seed_naming_their_file(tmp_path):
    for library, task, seed in [('sb3', 'cartpole', 0), ('agents', 'pendulum', 1),
                                ('agents', 'pendulum', 0)]:
        with open(tmp_path / f'{library}-{task}-{seed}.json', 'w') as file_:
            json.dump(dict(library=library, task=task, seed=seed, evaluations=EVALUATIONS), file_)
    runs = run_files.load_runs(str(tmp_path))
    assert [(run['library'], run['task'], run['seed']) for run in runs] == [
        ('agents', 'pendulum', 0), ('agents', 'pendulum', 1), ('sb3', 'cartpole', 0)]
    assert runs[0]['file'] == os.path.relpath(
        str(tmp_path / 'agents-pendulum-0.json'), reporting.ROOT)


def test_the_committed_runs_are_where_the_learning_benchmark_writes_them():
    assert run_files.RUNS == os.path.join(
        reporting.ROOT, 'benchmarks', 'results', 'learning', 'runs')
    assert run_files.load_runs()
