"""The layout of benchmarks/: scripts share code through lib/ only, and no file edits sys.path.

A script imported as a library drags its flags, its heavy imports and its
dependents along, so what several scripts use lives in `lib/`, and each
script imports `lib` and `agents`; a test imports the script it tests.
"""

import ast
import os

import pytest

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))


def _python_files():
    for directory, _, names in os.walk(BENCHMARKS):
        for name in sorted(names):
            if name.endswith('.py'):
                yield os.path.join(directory, name)


def _scripts():
    """The module names of the scripts: files of benchmarks/ and of probes/ outside lib/."""
    names = set()
    for folder in (BENCHMARKS, os.path.join(BENCHMARKS, 'probes')):
        names.update(
            os.path.splitext(name)[0] for name in os.listdir(folder)
            if name.endswith('.py') and not name.endswith('_test.py') and name != '__init__.py')
    return names


def imported_modules(source):
    """The full name of every module that `source` imports, at any depth.

    `from package import name` counts as `package.name` as well as `package`,
    since `name` may be a module.
    """
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f'{node.module}.{alias.name}' for alias in node.names)
    return names


def _script_names(module, scripts):
    """The scripts that a module name means, run from benchmarks/ or the repository's root."""
    for prefix in ('', 'benchmarks.', 'benchmarks.probes.'):
        if module.startswith(prefix) and module[len(prefix):] in scripts:
            yield module[len(prefix):]


def edits_module_path(source):
    """Whether `source` calls `sys.path.insert` or `sys.path.append`."""
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ('insert', 'append')
                and ast.unparse(node.func.value) == 'sys.path'):
            return True
    return False


def test_no_file_imports_a_script_but_a_test_its_own():
    scripts = _scripts()
    wrong = []
    for path in _python_files():
        with open(path) as file_:
            imported = {script for module in imported_modules(file_.read())
                        for script in _script_names(module, scripts)}
        name = os.path.splitext(os.path.basename(path))[0]
        imported.discard(name[:-len('_test')] if name.endswith('_test') else None)
        if imported:
            relative = os.path.relpath(path, BENCHMARKS)
            wrong.append(f'{relative} imports {", ".join(sorted(imported))}')
    assert not wrong, 'Move what scripts share into benchmarks/lib/: ' + '; '.join(wrong)


def test_no_file_edits_the_module_path():
    wrong = [os.path.relpath(path, BENCHMARKS) for path in _python_files()
             if edits_module_path(open(path).read())]
    assert not wrong, f'These files edit sys.path: {", ".join(wrong)}'


@pytest.mark.parametrize('source, expected', [
    ('import learning', {'learning'}),
    ('def f():\n    import report', {'report'}),
    ('from benchmarks.lib import collection', {'benchmarks.lib', 'benchmarks.lib.collection'}),
    ('from . import reporting', set()),
])
def test_imports_are_found_at_any_depth(source, expected):
    assert imported_modules(source) == expected


def test_an_insertion_into_the_module_path_is_found():
    assert edits_module_path('import sys\nsys.path.insert(0, "x")')
    assert not edits_module_path('paths = []\npaths.insert(0, "x")')
