"""The throughput benchmark's CPU reader: ``/proc/<pid>/stat`` parsed, and the CPU of a real
process tree (a child that burns CPU in a grandchild) counted with its descendants."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from litellm_kvwarm.lab.bench.proc_cpu import CLOCK_TICKS, parse_stat, tree_cpu_s

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def test_parse_stat_counts_fields_after_the_last_parenthesis():
    # pid (comm) state ppid ... utime=14 stime=15 cutime=16 cstime=17; a comm may hold ") ("
    fields = ["S", "42"] + ["0"] * 9 + ["100", "20", "3", "4"] + ["0"] * 30
    assert parse_stat("7 (a) (b) " + " ".join(fields)) == (42, 127)
    with pytest.raises(ValueError):
        parse_stat("no parenthesis here")


def test_tree_cpu_counts_a_busy_grandchild():
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(30)\n"
    parent = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {burn!r}])\ntime.sleep(30)\n"
    proc = subprocess.Popen([sys.executable, "-c", parent])
    try:
        began = tree_cpu_s(proc.pid)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (tree_cpu_s(proc.pid) or 0) - began < 0.5:
            time.sleep(0.1)
        used = tree_cpu_s(proc.pid) - began
        assert 0.5 <= used < 5, used  # the grandchild's 0.6 s, counted through its parent's pid
    finally:
        proc.kill()
        proc.wait()
    assert tree_cpu_s(proc.pid) is None  # gone
    assert CLOCK_TICKS > 0
