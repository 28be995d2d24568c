"""How pytest-xdist hands the suite's tests to its processes.

With `--dist loadfile` each test file is one unit of work, so a file's module
fixtures run once. A file listed under `split_by_test` in pytest.ini is handed
out one test function at a time instead (the cases of a parametrized test stay
together): a file whose tests each build what they use, and which as one unit
would keep one process busy after the others have finished. Its units go out
first, the other files after them, most tests first, so that no long test is
left to run alone at the end.
"""

import pytest
from xdist.scheduler import LoadFileScheduling


class SplitFileScheduling(LoadFileScheduling):
    """One unit of work per test file, or per test function in the files named."""

    def __init__(self, config, log, split_files):
        super().__init__(config, log)
        self._split_files = frozenset(split_files)
        self._queue_ordered = False

    def _split_scope(self, nodeid):
        path, _, test = nodeid.partition('::')
        if path in self._split_files:
            return f'{path}::{test.partition("[")[0]}'
        return path

    def _assign_work_unit(self, node):
        # The queue is complete when the first unit goes out: put the split units first.
        if not self._queue_ordered:
            self._queue_ordered = True
            for scope in reversed([scope for scope in self.workqueue if '::' in scope]):
                self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)


def pytest_addoption(parser):
    """Declares `split_by_test`, the files handed out one test function at a time."""
    parser.addini(
        'split_by_test', 'test files that pytest-xdist hands out one test function at a time',
        type='linelist', default=[])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With `--dist loadfile`, the scheduling that splits the files `split_by_test` names."""
    if config.getvalue('dist') != 'loadfile':
        return None
    return SplitFileScheduling(config, log, config.getini('split_by_test'))
