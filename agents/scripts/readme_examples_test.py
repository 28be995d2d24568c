"""The README's configuration and PyTorch/SB3 examples run as written.

In the configuration section, Python blocks whose first line names a file
(`# my_configs.py`) are written to that file in a fresh directory and
imported; other Python blocks are run there. Each `python -m
agents.scripts.train` command of the shell blocks is run there until
training has started, and then interrupted as with Ctrl-C, which must end it
with one line of explanation. Other lines of shell blocks show output. The
Python blocks of the section on PyTorch and Stable-Baselines3 are run as well.
"""

import os
import re
import shlex
import subprocess
import sys

from agents.scripts import train_test

README = os.path.join(os.path.dirname(__file__), '..', '..', 'README.md')
SECTION = '## Configurations'
FACES_SECTION = '## Using the environments from PyTorch and Stable-Baselines3'


def code_blocks(markdown, section):
    """The (language, code) of each code block in a section of a Markdown text.

    Fenced blocks carry their language; indented blocks are shell commands.
    """
    start = markdown.index(section)
    end = markdown.find('\n## ', start + len(section))
    text = markdown[start:end if end >= 0 else None]
    blocks = [(language, code) for language, code in re.findall(
        r'^```(\w*)\n(.*?)^```', text, re.DOTALL | re.MULTILINE)]
    text = re.sub(r'^```.*?^```', '', text, flags=re.DOTALL | re.MULTILINE)
    for match in re.finditer(r'(?:^\n((?: {4}.*\n)+))', text, re.MULTILINE):
        blocks.append(('sh', re.sub(r'^ {4}', '', match.group(1), flags=re.MULTILINE)))
    return blocks


def _examples(section=SECTION):
    with open(README) as file_:
        return code_blocks(file_.read(), section)


def test_the_section_has_examples_of_languages_the_test_runs():
    languages = [language for language, _ in _examples()]
    assert 'python' in languages and 'sh' in languages
    assert set(languages) <= {'python', 'sh'}


def test_code_blocks_are_found_fenced_and_indented():
    markdown = (
        '## Configurations\n\nText.\n\n```python\n# a.py\nx = 1\n```\n\n'
        '    python -m agents.scripts.train --config=a:b\n\nMore.\n\n## Next\n\n    ls\n')
    assert code_blocks(markdown, '## Configurations') == [
        ('python', '# a.py\nx = 1\n'), ('sh', 'python -m agents.scripts.train --config=a:b\n')]


def test_examples_run_as_written(tmp_path):
    environ = dict(os.environ, PYTHONPATH=f'{tmp_path}{os.pathsep}{os.getcwd()}')
    modules, commands = [], []
    for language, code in _examples():
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


def test_pytorch_and_sb3_examples_run_as_written(tmp_path):
    environ = dict(os.environ, PYTHONPATH=os.getcwd())
    codes = [code for language, code in _examples(FACES_SECTION) if language == 'python']
    assert len(codes) >= 2
    for code in codes:
        _run([sys.executable, '-c', code], tmp_path, environ)


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
