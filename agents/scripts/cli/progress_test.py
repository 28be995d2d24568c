"""Tests of the progress line on a terminal and of the plain lines elsewhere."""

import fcntl
import io
import logging
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time

import pytest

from agents.scripts.cli import progress


def test_plain_lines_without_a_terminal():
    stream = io.StringIO()
    shown = progress.Progress(1000, step=200, stream=stream, interval=0)
    shown.update(400)
    shown.update(400, eval_score=-12.345, eval_std=1.5)
    time.sleep(0.01)
    shown.update(600, eval_score=float('nan'))
    shown.close()
    lines = stream.getvalue().splitlines()
    assert '\r' not in stream.getvalue()
    # The rate counts from the first update, so it is known from the second step on.
    assert [re.sub(r'\d:\d\d:\d\d elapsed', 'T elapsed', line) for line in lines[:2]] == [
        'Progress: 400/1,000 steps (40.0%), ? env steps/s, no eval yet, T elapsed, ? left',
        'Progress: 400/1,000 steps (40.0%), ? env steps/s, last eval -12.3 ± 1.5, T elapsed, '
        '? left']
    assert re.fullmatch(
        r'Progress: 600/1,000 steps \(60\.0%\), [\d,]+ env steps/s, last eval: no episode '
        r'finished, \d:\d\d:\d\d elapsed, \d:\d\d:\d\d left', lines[2])
    assert len(lines) == 3


def test_plain_lines_come_at_most_every_interval_and_at_the_end():
    stream = io.StringIO()
    shown = progress.Progress(1000, stream=stream, interval=3600)
    for step in range(100, 1001, 100):
        shown.update(step)
    shown.close()
    lines = stream.getvalue().splitlines()
    assert [line.split(' steps')[0] for line in lines] == [
        'Progress: 100/1,000', 'Progress: 1,000/1,000']


def test_log_records_print_above_the_line_only_on_a_terminal():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger('progress_test')
    logger.addHandler(handler)
    try:
        shown = progress.Progress(100, stream=stream, interval=3600)
        shown.redirect(handler)
        logger.warning('plain')
        shown.close()
        assert stream.getvalue().splitlines()[0] == 'plain'
        assert not handler.filters
    finally:
        logger.removeHandler(handler)


# Runs in a process whose stderr is a terminal.
TERMINAL_SCRIPT = """
import logging, sys, time
from agents.scripts.cli import progress
handler = logging.StreamHandler(sys.stderr)
logger = logging.getLogger('run')
logger.addHandler(handler)
shown = progress.Progress(1000, step=200)
shown.redirect(handler)
for step in (400, 600, 800):
    time.sleep(0.05)
    shown.update(step)
logger.warning('a log message')
shown.update(1000)
shown.update(1000, eval_score=-12.5, eval_std=1.0)  # An evaluation at the same step.
shown.close()
logger.warning('after the line')
"""


@pytest.mark.parametrize('columns', [120, 0])  # Some terminals tell no size.
def test_one_line_updates_in_place_on_a_terminal(columns):
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack('HHHH', 30, columns, 0, 0))
    process = subprocess.Popen(
        [sys.executable, '-c', TERMINAL_SCRIPT], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=terminal, env=dict(os.environ, PYTHONPATH=os.getcwd()))
    os.close(terminal)
    output = b''
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # The terminal closes when the process ends.
            break
        if not chunk:
            break
        output += chunk
    os.close(controller)
    assert process.wait(timeout=60) == 0
    text = output.decode()
    # Each update rewrites the line after a carriage return.
    updates = [part for part in text.split('\r') if ' steps ' in part]
    assert len(updates) >= 4
    assert updates[0].startswith('200/1,000 steps  20%|')
    assert 'no eval yet' in updates[0]
    # The evaluation shows at once, and again when the line closes.
    assert len([part for part in updates if 'last eval -12.5' in part]) >= 2
    # What the terminal shows: on each line, what was written after its last return.
    screen = [line.rsplit('\r', 1)[-1] for line in text.replace('\r\n', '\n').split('\n')]
    assert screen[-4:] == [
        'a log message', screen[-3], 'after the line', '']  # The log prints above the line.
    assert re.fullmatch(
        r'1,000/1,000 steps 100%\|█{10}\| [\d,]+ env steps/s, last eval -12\.5 ± 1\.0, '
        r'\d:\d\d:\d\d elapsed, 0:00:00 left', screen[-3].rstrip()), screen[-3]
