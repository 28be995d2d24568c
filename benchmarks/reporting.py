"""What every benchmark saves beside its numbers: how, when and where it ran."""

import datetime
import os
import platform
import sys

import gymnasium


def run_record(load_before, load_after=None):
    """The command line, the date and the machine of this run, for a results file.

    Args:
      load_before: `os.getloadavg()` when the measurements began.
      load_after: `os.getloadavg()` when they ended; now if None.

    Returns:
      Dict with the keys 'command', 'date' and 'machine'.
    """
    return {
        'command': sys.argv, 'date': datetime.datetime.now().isoformat(),
        'machine': {
            'cores': os.cpu_count(), 'python': platform.python_version(),
            'gymnasium': gymnasium.__version__, 'load_before': load_before,
            'load_after': os.getloadavg() if load_after is None else load_after}}
