"""Load TensorFlow without its C++ log at the default level.

TensorFlow's C++ libraries log through absl before anything initializes absl's
log, and the lines they print while TensorFlow loads (oneDNN, the CUDA stub,
absl's own warning about its initialization) ignore `TF_CPP_MIN_LOG_LEVEL`,
which filters the rest of the C++ log. The command line scripts call
`import_quietly()` before anything else loads TensorFlow: it sets
`TF_CPP_MIN_LOG_LEVEL` to 3 (fatal errors only) unless it is set already, and
drops the lines TensorFlow prints while it loads that are below that level.
`TF_CPP_MIN_LOG_LEVEL=0` shows them all.
"""

import contextlib
import os
import re
import sys
import tempfile

from agents.tools import process_memory

# TF_CPP_MIN_LOG_LEVEL unless set: 0 shows every line, 1 hides INFO, 2 also
# WARNING, 3 also ERROR.
DEFAULT_LEVEL = '3'
# A line of the C++ log and its severity letter, in absl's format (which shows
# `0000 00:00:<seconds since 1970>` as the time before absl is initialized) or
# in TensorFlow's own.
_LOG_LINE = re.compile(
    rb'([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^ \]]+:\d+\] '
    rb'|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) [^ \]]+:\d+\] ')
_SEVERITIES = b'IWEF'
# absl prints this once, before the first line it logs uninitialized.
_ABSL_WARNING = (
    b'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR')


def import_quietly():
    """Import TensorFlow, keeping its C++ log below `TF_CPP_MIN_LOG_LEVEL` (3 if unset) out.

    Call it before TensorFlow loads, as the first thing the `main` of a command
    line script does; the variable also reaches the processes it starts.
    TensorFlow loads without the modules it would import for Keras
    (see `process_memory.skipping_unused_imports`), and XLA compiles with
    its classic emitters (see `process_memory.prefer_classic_xla_emitters`).

    Returns:
      The `tensorflow` module.
    """
    level = os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', DEFAULT_LEVEL)
    process_memory.prefer_classic_xla_emitters()
    with filtered_stderr(_as_level(level)), process_memory.skipping_unused_imports():
        import tensorflow
    return tensorflow


@contextlib.contextmanager
def filtered_stderr(level):
    """Hold back what the process writes to standard error, then write all but the C++ log.

    Works on the file descriptor, so it holds back what C++ libraries write too.

    Args:
      level: Lines of the C++ log of a severity below this (0 INFO, 1 WARNING,
        2 ERROR, 3 FATAL) are dropped, and absl's warning that it was not
        initialized unless the level is 0.

    Yields:
      Nothing.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                held.seek(0)
                kept = b''.join(line for line in held if not _dropped(line, level))
                view = memoryview(kept)
                while view:
                    view = view[os.write(2, view):]
    finally:
        os.close(saved)


def _dropped(line, level):
    """Whether a line of standard error is C++ log below `level`."""
    match = _LOG_LINE.match(line)
    if match:
        return _SEVERITIES.index(match.group(1) or match.group(2)) < level
    return level > 0 and line.rstrip(b'\r\n') == _ABSL_WARNING


def _as_level(value):
    """The level of a `TF_CPP_MIN_LOG_LEVEL` value; 0, as TensorFlow reads it, if not a number."""
    try:
        return int(value)
    except ValueError:
        return 0
