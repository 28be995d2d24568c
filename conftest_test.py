"""Tests for how pytest-xdist hands out the suite's tests (conftest.py)."""

import configparser
import pathlib

import conftest


class _Config:
    """The parts of pytest's config that the scheduling reads."""

    def __init__(self, dist, split_by_test=()):
        self._values = dict(dist=dist, tx=['3*popen'])
        self._split_by_test = list(split_by_test)
        self.option = type('Options', (), {'loadscopereorder': True})()

    def getvalue(self, name):
        return self._values[name]

    def getini(self, name):
        assert name == 'split_by_test'
        return self._split_by_test


def _scheduling(split_by_test):
    return conftest.pytest_xdist_make_scheduler(_Config('loadfile', split_by_test), log=None)


def test_a_file_is_one_unit_unless_it_is_split_by_test_function():
    scheduling = _scheduling(['a/split_test.py'])
    scopes = [scheduling._split_scope(nodeid) for nodeid in (
        'a/whole_test.py::test_one', 'a/whole_test.py::test_two[x]',
        'a/split_test.py::test_one[x-1]', 'a/split_test.py::test_one[y::2]',
        'a/split_test.py::test_two')]
    assert scopes == [
        'a/whole_test.py', 'a/whole_test.py',
        'a/split_test.py::test_one', 'a/split_test.py::test_one', 'a/split_test.py::test_two']


class _Worker:
    """A pytest-xdist worker that records the tests it is sent."""

    def __init__(self, name):
        self.gateway = type('Gateway', (), {'id': name})()
        self.sent = []
        self.shutting_down = False

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def shutdown(self):
        pass


def test_the_units_of_split_files_go_out_first_then_the_largest_files():
    collection = [
        'a/small_test.py::test_one',
        'a/large_test.py::test_one', 'a/large_test.py::test_two', 'a/large_test.py::test_three',
        'a/split_test.py::test_one', 'a/split_test.py::test_two[x]',
        'a/split_test.py::test_two[y]']
    scheduling = _scheduling(['a/split_test.py'])
    workers = [_Worker(f'gw{index}') for index in range(3)]
    for worker in workers:
        scheduling.add_node(worker)
        scheduling.add_node_collection(worker, collection)
    scheduling.schedule()
    sent = [[collection[index] for index in worker.sent] for worker in workers]
    assert sent[0][:2] == ['a/split_test.py::test_two[x]', 'a/split_test.py::test_two[y]']
    assert sent[1][:1] == ['a/split_test.py::test_one']
    assert sent[2][:3] == ['a/large_test.py::test_one', 'a/large_test.py::test_two',
                           'a/large_test.py::test_three']
    assert sorted(sum(sent, [])) == sorted(collection)


def test_other_distributions_keep_pytest_xdist_scheduling():
    assert conftest.pytest_xdist_make_scheduler(_Config('load'), log=None) is None


def test_the_files_split_by_test_exist():
    ini = configparser.ConfigParser()
    ini.read(pathlib.Path(__file__).parent / 'pytest.ini')
    files = ini['pytest']['split_by_test'].split()
    assert files
    for name in files:
        assert (pathlib.Path(__file__).parent / name).is_file(), name
