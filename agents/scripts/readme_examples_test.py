"""The examples of the README and of the pages in docs/ run as written.

`EXAMPLES` names each section with examples and how it runs:

- `blocks`: each Python block is a program of its own; they are written to
  files and run as `python FILE`, all at once.
- `configs`: Python blocks whose first line names a file (`# my_configs.py`)
  are written to that file in a fresh directory and imported; other Python
  blocks are run there. Each `python -m agents.scripts.train` command of the
  shell blocks is run there until training has started, and then interrupted
  as with Ctrl-C, which must end it with one line of explanation. Other lines
  of shell blocks show output.

`NOT_RUN` names the sections whose examples need what a test cannot have,
with the reason. Every Python block of the README and of docs/ belongs to one
of the two, so a new example is run or is left out on purpose.
"""

import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

from agents.scripts import train_test

REPOSITORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')

EXAMPLES = {
    ('README.md', '## The four tools'): 'blocks',
    ('docs/environments.md', '## A batch of environments'): 'blocks',
    ('docs/environments.md', '## The Gymnasium and Stable-Baselines3 adapters'): 'blocks',
    ('docs/training.md', '## Configs'): 'configs',
    ('docs/recurrent.md', '## Train a recurrent policy'): 'blocks',
}

NOT_RUN = {
    ('docs/environments.md', '## Ray'): 'needs a Ray cluster at address "auto"',
    ('docs/deployment.md', '## Play an episode with TensorFlow and Gymnasium only'):
        'needs an exported policy; the export tests play one',
    ('docs/tuning.md', '## Using the best config'): 'an excerpt of a generated file',
    ('docs/conformance.md', '## Dict observations in training'):
        'needs a goal task of your own; agents/scripts/goal_task_test.py trains one',
}


def _lines(markdown):
    """Each line of a Markdown text with the heading it falls under (code blocks never head)."""
    heading, fenced = None, False
    for line in markdown.splitlines(keepends=True):
        if line.startswith('```'):
            fenced = not fenced
        elif not fenced and re.match(r'#+ ', line):
            heading = line.rstrip('\n')
        yield heading, line


def _level(heading):
    return len(heading.split(' ', 1)[0])


def _section_text(markdown, section):
    """The text of a section: its heading and everything up to a heading of its level or above."""
    lines, inside = [], False
    for heading, line in _lines(markdown):
        if heading == section and line.rstrip('\n') == section:
            inside = True
        elif inside and line.rstrip('\n') == heading and _level(heading) <= _level(section):
            break
        if inside:
            lines.append(line)
    if not inside:
        raise ValueError(f'no section {section!r}')
    return ''.join(lines)


def code_blocks(markdown, section):
    """The (language, code) of each code block in a section of a Markdown text.

    Fenced blocks carry their language; indented blocks are shell commands.
    """
    text = _section_text(markdown, section)
    blocks = [(language, code) for language, code in re.findall(
        r'^```(\w*)\n(.*?)^```', text, re.DOTALL | re.MULTILINE)]
    text = re.sub(r'^```.*?^```', '', text, flags=re.DOTALL | re.MULTILINE)
    for match in re.finditer(r'(?:^\n((?: {4}.*\n)+))', text, re.MULTILINE):
        blocks.append(('sh', re.sub(r'^ {4}', '', match.group(1), flags=re.MULTILINE)))
    return blocks


def _read(page):
    with open(os.path.join(REPOSITORY, page)) as file_:
        return file_.read()


def _examples(page, section):
    return code_blocks(_read(page), section)


def _pages():
    paths = ['README.md'] + sorted(glob.glob(
        os.path.join(REPOSITORY, 'docs', '**', '*.md'), recursive=True))
    return [os.path.relpath(path, REPOSITORY) for path in paths]


def _unlisted_python_examples(page):
    """Headings of a page's Python blocks that no section of EXAMPLES or NOT_RUN holds."""
    markdown = _read(page)
    listed = set()
    for listed_page, section in {**EXAMPLES, **NOT_RUN}:
        if listed_page == page:
            listed.update(heading for heading, _ in _lines(_section_text(markdown, section)))
    return sorted({
        str(heading) for heading, line in _lines(markdown)
        if line.startswith('```python') and heading not in listed})


def test_every_python_example_is_run_or_left_out_on_purpose():
    missing = [
        f'{page}: {heading}' for page in _pages() for heading in _unlisted_python_examples(page)]
    assert not missing, (
        'Python examples that no test runs; add their sections to EXAMPLES in '
        f'agents/scripts/readme_examples_test.py (or to NOT_RUN, with the reason): {missing}')


@pytest.mark.parametrize('page, section', sorted(EXAMPLES))
def test_listed_sections_have_python_examples(page, section):
    languages = [language for language, _ in _examples(page, section)]
    assert 'python' in languages and set(languages) <= {'python', 'sh'}


def test_code_blocks_are_found_fenced_and_indented():
    markdown = (
        '## Configurations\n\nText.\n\n```python\n# a.py\nx = 1\n```\n\n'
        '    python -m agents.scripts.train --config=a:b\n\n### Sub\n\n    ls\n\n'
        '## Next\n\n    pwd\n')
    assert code_blocks(markdown, '## Configurations') == [
        ('python', '# a.py\nx = 1\n'),
        ('sh', 'python -m agents.scripts.train --config=a:b\n'), ('sh', 'ls\n')]
    assert code_blocks(markdown, '### Sub') == [('sh', 'ls\n')]


@pytest.mark.integration
@pytest.mark.parametrize('page, section', sorted(
    key for key, way in EXAMPLES.items() if way == 'blocks'))
def test_examples_run_as_written(page, section, tmp_path):
    environ = dict(os.environ, PYTHONPATH=os.getcwd())
    codes = [code for language, code in _examples(page, section) if language == 'python']
    processes = []
    for index, code in enumerate(codes):
        path = tmp_path / f'example_{index}.py'
        path.write_text(code)
        processes.append(subprocess.Popen(
            [sys.executable, str(path)], cwd=tmp_path, env=environ, text=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    for code, process in zip(codes, processes):
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, f'{code}\n{stderr[-3000:]}'


@pytest.mark.integration
@pytest.mark.parametrize('page, section', sorted(
    key for key, way in EXAMPLES.items() if way == 'configs'))
def test_config_examples_train_as_written(page, section, tmp_path):
    environ = dict(os.environ, PYTHONPATH=f'{tmp_path}{os.pathsep}{os.getcwd()}')
    modules, commands = [], []
    for language, code in _examples(page, section):
        first_line = code.split('\n', 1)[0]
        if language == 'python' and re.fullmatch(r'# \w+\.py', first_line):
            (tmp_path / first_line[2:]).write_text(code)
            modules.append(first_line[2:-3])
        elif language == 'python':
            _run([sys.executable, '-c', code], tmp_path, environ)
        else:
            commands += [line for line in code.splitlines() if line.startswith('python ')]
    if modules:
        _run([sys.executable, '-c', f'import {", ".join(modules)}'], tmp_path, environ)
    assert commands
    for command in commands:
        argv = shlex.split(command)
        assert argv[:3] == ['python', '-m', 'agents.scripts.train'], command
        _start_and_interrupt([sys.executable] + argv[1:], tmp_path, environ)


def _run(argv, directory, environ):
    result = subprocess.run(
        argv, cwd=directory, env=environ, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]


def _start_and_interrupt(argv, directory, environ):
    """Run a training command until it trains, then interrupt it as Ctrl-C does."""
    code, lines, _ = train_test.run_command(
        argv, directory, environ, interrupt_on='Training from')
    log = '\n'.join(lines)
    assert any('Training from' in line for line in lines), log[-3000:]
    assert code == 130 and lines[-1].startswith('Interrupted by SIGINT. '), log[-3000:]
    assert 'Traceback' not in log
