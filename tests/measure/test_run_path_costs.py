"""What a run pays before and after its process, made cheaper, still says the same: the
parent's peak read from a status file kept open (re-read, and a fork's own), and the start
time handed to the guard taken from the clock before the fork (a lower bound of /proc's)."""

from __future__ import annotations

import os
import subprocess
import sys

from measure import orphans
from measure.peak_rss import own_peak_kib


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    raise AssertionError(f"no {field}")


def _status_hwm() -> int:
    return _status_kib("VmHWM")


def test_the_kept_status_file_is_read_afresh_each_time() -> None:
    before = own_peak_kib()
    # grow past the mark, wherever it is: a worker late in the suite may sit well below a
    # peak an earlier test left, and growing 64 MiB from there would not move the mark
    headroom_kib = max(0, before - _status_kib("VmRSS"))
    grown = bytearray((headroom_kib + 64 * 1024) * 1024)
    for i in range(0, len(grown), 4096):
        grown[i] = 1  # touched: resident
    after = own_peak_kib()
    assert after == _status_hwm()
    assert after >= before + 60 * 1024
    del grown


def test_a_forked_child_reads_its_own_peak_not_its_parents() -> None:
    own_peak_kib()  # the parent's file is open now
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: grow well past the parent, then say both figures
        try:
            os.close(r)
            start = own_peak_kib()
            grown = bytearray(96 * 1024 * 1024)
            for i in range(0, len(grown), 4096):
                grown[i] = 1
            os.write(w, f"{start} {own_peak_kib()} {_status_hwm()}".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        start, child_said, child_true = (int(x) for x in f.read().split())
    os.waitpid(pid, 0)
    # the parent's file would say the parent's peak, which the child's 96 MiB never moved
    assert child_said >= start + 90 * 1024
    assert abs(child_true - child_said) < 4 * 1024  # read a moment apart


def test_the_start_tick_handed_to_the_guard_is_no_later_than_procs() -> None:
    for _ in range(5):
        before = orphans.boot_tick()
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                 stdin=subprocess.PIPE)  # fmt: skip
        try:
            st = orphans._stat(child.pid)
            assert st is not None
            after = orphans.boot_tick()
            assert before <= st[4] <= after
        finally:
            child.communicate(b"")
