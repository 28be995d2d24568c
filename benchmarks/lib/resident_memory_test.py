import os
import subprocess
import sys
import time

from lib import resident_memory


def test_the_process_tree_holds_this_process_and_its_children():
    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])
    try:
        time.sleep(0.2)
        tree = resident_memory.process_tree()
        assert tree[0] == os.getpid() and child.pid in tree
        own = resident_memory.status_field(os.getpid(), 'VmRSS') / 1024
        assert resident_memory.resident_megabytes() > own
    finally:
        child.kill()
        child.wait()


def test_a_process_names_its_command_line():
    assert sys.executable in resident_memory.command_line(os.getpid())


def test_the_sampler_records_samples_and_high_water_marks():
    with resident_memory.MemorySampler(every=0.01, describe=lambda pid: 'me') as sampler:
        time.sleep(0.1)
    assert len(sampler.samples) >= 2
    seconds, own, tree = sampler.samples[-1]
    assert seconds > 0 and 0 < own <= tree
    assert sampler.marks[os.getpid()][0] == 'me'
    assert sampler.peak_megabytes >= own
