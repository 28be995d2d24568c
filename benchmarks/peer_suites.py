"""The peers' own vector-environment test suites, run against the drop-in adapters.

`VectorEnv` stands in for Gymnasium's `SyncVectorEnv` and `SB3VecEnv` for
Stable-Baselines3's `DummyVecEnv`. This runs the peers' test files from their
published sources three ways: with the peer's own class, and with the peer's
class replaced by the adapter on each backend. The replacement happens at
import time, in a pytest plugin written to a temporary directory: every module
of the peer's package that holds the peer's class gets, under the same name, a
subclass of the adapter whose only change is the backend it builds on, so
the tests' own code runs unchanged. Tests of the peers' process-based classes
(SubprocVecEnv, AsyncVectorEnv), which the adapters do not stand in for, are
left out of every run. Nothing of the peers is copied here.

Get the peers' sources at versions whose tests fit the installed libraries
(`pip show stable-baselines3 gymnasium`); the recorded run used these commits:

    git clone https://github.com/DLR-RM/stable-baselines3 /tmp/sb3
    git -C /tmp/sb3 checkout e05d2dbe6eda0acd0ef2e316e3e4065677add3eb
    git clone https://github.com/Farama-Foundation/Gymnasium /tmp/gym
    git -C /tmp/gym checkout 3f0476a8cc224dcce2167cc4b6971ae0f04d5cfc

SB3's test_vec_monitor.py needs pandas.

Usage:
  python benchmarks/peer_suites.py --sb3=/tmp/sb3 --gymnasium=/tmp/gym
      [--backends parallel,inprocess] [--outdir benchmarks/results/peer_suites]

Writes results.json (every test's outcome) and results.md (counts per file and
adapter, and each failing test with the first line of its error) to the outdir.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree

from lib import reporting

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Suite -> (the peer's package, the module that exports its class, the class's
# name, our adapter's module and class, the test files under tests/).
SUITES = {
    'sb3': (
        'stable_baselines3', 'stable_baselines3.common.vec_env', 'DummyVecEnv',
        'agents.tools.envs.sb3_vec_env', 'SB3VecEnv',
        ['test_vec_envs.py', 'test_vec_normalize.py', 'test_vec_monitor.py',
         'test_vec_check_nan.py']),
    'gymnasium': (
        'gymnasium', 'gymnasium.vector', 'SyncVectorEnv', 'agents.tools.envs.vector_env',
        'VectorEnv',
        [f'vector/test_{name}.py' for name in (
            'autoreset_mode', 'observation_mode', 'sync_vector_env', 'vector_env',
            'vector_env_info', 'vector_wrapper')]),
}

# Tests of the peers' classes that the adapters do not stand in for (SB3's
# SubprocVecEnv, Gymnasium's AsyncVectorEnv), left out of every run.
DESELECT = 'not SubprocVecEnv and not Subproc and not AsyncVectorEnv and not Async'

# The plugin pytest loads before it collects the peer's tests: it rebinds the
# peer's class, in every module of the peer's package that holds it, to a
# subclass of the adapter on the chosen backend. Modules imported later take
# the class from those modules. Worker processes are forked from a server
# that has imported the peer's package already, so that each does not import
# it (and PyTorch) anew: this saves time, not behaviour.
PLUGIN = '''
import importlib
import multiprocessing
import sys

PACKAGE, HOME, PEER, MODULE, ADAPTER, BACKEND = {arguments!r}


def _on_backend(adapter):
    class OnBackend(adapter):
        def __init__(self, env_fns, *args, **kwargs):
            kwargs.setdefault('backend', BACKEND)
            super().__init__(env_fns, *args, **kwargs)

    OnBackend.__name__ = OnBackend.__qualname__ = adapter.__name__
    OnBackend.__module__ = adapter.__module__
    return OnBackend


def pytest_configure(config):
    del config
    multiprocessing.set_forkserver_preload([PACKAGE, HOME, MODULE])
    original = getattr(importlib.import_module(HOME), PEER)
    replacement = _on_backend(getattr(importlib.import_module(MODULE), ADAPTER))
    for name, module in list(sys.modules.items()):
        if name.split('.')[0] == PACKAGE and getattr(module, PEER, None) is original:
            setattr(module, PEER, replacement)
'''


def run_suite(checkout, suite, backend, workdir):
    """Run a peer's test files in one pytest; None as backend keeps the peer's class.

    Returns:
      Dict from test file to a dict from test id to (outcome, first line of
      the message).
    """
    package, home, peer, module, adapter, test_files = SUITES[suite]
    environ = dict(os.environ)
    paths = [REPOSITORY, checkout]
    plugin_args = []
    if backend is not None:
        plugin_dir = tempfile.mkdtemp(dir=workdir)
        with open(os.path.join(plugin_dir, 'peer_patch.py'), 'w') as file_:
            file_.write(PLUGIN.format(
                arguments=(package, home, peer, module, adapter, backend)))
        paths.insert(0, plugin_dir)
        plugin_args = ['-p', 'peer_patch']
    environ['PYTHONPATH'] = os.pathsep.join(paths + [environ.get('PYTHONPATH', '')])
    report = os.path.join(workdir, f'{suite}-{backend}.xml')
    subprocess.run(
        [sys.executable, '-m', 'pytest', *[os.path.join('tests', name) for name in test_files],
         '-q', '-p', 'no:cacheprovider', '-p', 'no:randomly', '-o', 'addopts=',
         '--continue-on-collection-errors', f'--rootdir={checkout}', f'--junitxml={report}',
         '-k', DESELECT, *plugin_args],
        cwd=checkout, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        check=False)
    by_file = {name: {} for name in test_files}
    modules = {'tests.' + name[:-len('.py')].replace('/', '.'): name for name in test_files}
    for test_id, outcome in _outcomes(report).items():
        # The module, without the class of a test in a class.
        home = test_id.split('::')[0]
        while home and home not in modules:
            home = home.rpartition('.')[0]
        home = modules.get(home, 'other')
        by_file.setdefault(home, {})[test_id] = outcome
    return by_file


def _outcomes(report):
    """Dict from test id to (outcome, first line of the message) from a JUnit XML report."""
    outcomes = {}
    for case in xml.etree.ElementTree.parse(report).iter('testcase'):
        test_id = '::'.join(part for part in (case.get('classname'), case.get('name')) if part)
        outcome, message = 'passed', ''
        for tag in ('failure', 'error', 'skipped'):
            element = case.find(tag)
            if element is not None:
                outcome = {'failure': 'failed'}.get(tag, tag)
                message = (element.get('message') or '').strip().split('\n')[0][:200]
                break
        outcomes[test_id] = (outcome, message)
    return outcomes


def _versions():
    versions = {}
    for name in ('stable-baselines3', 'gymnasium'):
        output = subprocess.run(
            [sys.executable, '-m', 'pip', 'show', name], capture_output=True, text=True).stdout
        versions[name] = next(
            (line.split(':', 1)[1].strip() for line in output.splitlines()
             if line.startswith('Version:')), 'not installed')
    return versions


def _markdown(results, record):
    lines = [
        '# The peers\' vector-environment suites against the adapters', '',
        f"Command: `python {' '.join(record['command'])}`", '',
        f"Date: {record['date']}; versions: {record['versions']}.", '',
        '| suite | file | class | passed | failed | errors | skipped |',
        '|---|---|---|---:|---:|---:|---:|']
    failures = []
    for suite, by_file in results.items():
        for test_file, by_adapter in by_file.items():
            for adapter, outcomes in by_adapter.items():
                counts = collections.Counter(outcome for outcome, _ in outcomes.values())
                lines.append(
                    f"| {suite} | {test_file} | {adapter} | {counts['passed']} | "
                    f"{counts['failed']} | {counts['error']} | {counts['skipped']} |")
                failures.extend(
                    f'- {adapter}: `{test_id}`: {message}'
                    for test_id, (outcome, message) in sorted(outcomes.items())
                    if outcome in ('failed', 'error'))
    lines += ['', '## Failures', ''] + (failures or ['None.'])
    return '\n'.join(lines) + '\n'


def main():
    """Run the suites named on the command line and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sb3', help='Checkout of DLR-RM/stable-baselines3 (holding tests/).')
    parser.add_argument('--gymnasium', help='Checkout of Farama-Foundation/Gymnasium.')
    parser.add_argument('--backends', default='parallel,inprocess')
    parser.add_argument(
        '--outdir', default=os.path.join(REPOSITORY, 'benchmarks', 'results', 'peer_suites'))
    args = parser.parse_args()
    checkouts = {'sb3': args.sb3, 'gymnasium': args.gymnasium}
    for suite, checkout in checkouts.items():
        if checkout and not os.path.isdir(os.path.join(checkout, 'tests')):
            parser.error(f'--{suite}={checkout} holds no tests/ directory.')
    if not any(checkouts.values()):
        parser.error('Give --sb3 or --gymnasium (or both): checkouts of the peers.')
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        for suite, checkout in checkouts.items():
            if not checkout:
                continue
            _, _, peer, _, adapter, _ = SUITES[suite]
            runs = {peer: None, **{
                f'{adapter} ({backend})': backend for backend in args.backends.split(',')}}
            for name, backend in runs.items():
                for test_file, outcomes in run_suite(checkout, suite, backend, workdir).items():
                    results.setdefault(suite, {}).setdefault(test_file, {})[name] = outcomes
                    counts = collections.Counter(outcome for outcome, _ in outcomes.values())
                    print(suite, test_file, name, dict(counts), flush=True)
    record = dict(reporting.run_record(load_before), versions=_versions())
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, 'results.json'), 'w') as file_:
        json.dump({'run': record, 'results': results}, file_, indent=1)
    with open(os.path.join(args.outdir, 'results.md'), 'w') as file_:
        file_.write(_markdown(results, record))


if __name__ == '__main__':
    main()
