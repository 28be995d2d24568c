"""The repository's lint: ruff with the checked-in ruff.toml, and one docstring dialect.

These run with the rest of the suite, so the README's test command, and CI
with it, fail on lint errors.
"""

import ast
import os
import re
import subprocess
import sys

import pytest

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Google-style sections whose items are indented below their header.
_SECTION = re.compile(r'^( *)(Args|Attributes|Raises|Returns|Yields):$')


def _python_files():
    for folder in ('agents', 'benchmarks'):
        for directory, _, names in os.walk(os.path.join(REPOSITORY, folder)):
            yield from (
                os.path.join(directory, name) for name in sorted(names) if name.endswith('.py'))


def _docstrings(tree):
    """The docstring constants of a module: of modules, classes, functions, `X.__doc__ = ...`."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = node.body[0] if node.body else None
            if isinstance(docstring, ast.Expr):
                yield docstring.value
        elif isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Attribute) and target.attr == '__doc__'
                for target in node.targets):
            yield node.value


def misindented_sections(source):
    """Line numbers of docstring sections whose items are not indented by two spaces.

    Args:
      source: Python source code.

    Returns:
      List of the line numbers of the sections' headers.
    """
    found = []
    for constant in _docstrings(ast.parse(source)):
        if not isinstance(constant, ast.Constant) or not isinstance(constant.value, str):
            continue
        lines = constant.value.split('\n')
        for index, line in enumerate(lines[:-1]):
            header = _SECTION.match(line)
            item = lines[index + 1]
            if header and item.strip():
                indent = len(item) - len(item.lstrip(' '))
                if indent != len(header.group(1)) + 2:
                    found.append(constant.lineno + index)
    return found


def test_ruff_finds_no_lint_errors():
    result = subprocess.run(
        [sys.executable, '-m', 'ruff', 'check', '--no-cache', REPOSITORY],
        capture_output=True, text=True, cwd=REPOSITORY)
    assert result.returncode == 0, (
        f'ruff check found lint errors (see ruff.toml; `ruff check --fix` fixes some):\n'
        f'{result.stdout}{result.stderr}')


def test_docstring_sections_indent_their_items_by_two_spaces():
    wrong = [
        f'{os.path.relpath(path, REPOSITORY)}:{line}' for path in _python_files()
        for line in misindented_sections(open(path).read())]
    assert not wrong, f'Indent the items of these sections by two spaces: {", ".join(wrong)}'


@pytest.mark.parametrize('source, expected', [
    ('def f(x):\n    """Do.\n\n    Args:\n      x: An x.\n    """\n', []),
    ('def f(x):\n    """Do.\n\n    Args:\n        x: An x.\n    """\n', [4]),
    ('class A:\n    """A.\n\n    Attributes:\n     y: A y.\n    """\n', [4]),
    ('T.__doc__ = """T.\n\nReturns:\n    The t.\n"""\n', [3]),
    ('"""Module.\n\nReturns:\n  The t.\n"""\n', []),
])
def test_misindented_sections_are_found(source, expected):
    assert misindented_sections(source) == expected
