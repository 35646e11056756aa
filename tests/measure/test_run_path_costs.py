"""What a run pays before and after its process, made cheaper, still says the same: the
parent's peak read from a status file kept open (re-read, and a fork's own), and the start
time handed to the guard taken from the clock before the fork (a lower bound of /proc's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from measure import orphans
from measure.peak_rss import _status_hwm_kib, counter_slack_kib, own_peak_kib
from measure.runner import run_command


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
    assert _status_hwm_kib() == _status_hwm()  # the kept file, read afresh: exact
    # the figure itself may be getrusage's: the kernel's batched count of the same pages
    assert abs(after - _status_hwm()) <= counter_slack_kib()
    assert after >= before + 60 * 1024 - counter_slack_kib()
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


# exec'd by a process that peaked at 400 MB: ru_maxrss starts there, VmHWM far below
BORN_BIG = """
import json, resource, sys
from measure.peak_rss import _status_hwm_kib, counter_slack_kib, own_peak_kib
def hwm():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
said = [(own_peak_kib(), hwm(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)]
grown = bytearray(600 * 1024 * 1024)
for i in range(0, len(grown), 4096):
    grown[i] = 1
said.append((own_peak_kib(), hwm(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
print(json.dumps(said))
"""
PARENT_400MB = """
import subprocess, sys
x = bytearray(400 * 1024 * 1024)
for i in range(0, len(x), 4096):
    x[i] = 1
sys.exit(subprocess.run([sys.executable, "-c", sys.argv[1]]).returncode)
"""


def test_the_peak_is_our_own_though_our_parent_peaked_higher() -> None:
    """getrusage's figure holds the mark our exec inherited; the cheap read must not take
    it for ours while it is higher, and takes over once ours has passed it."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", PARENT_400MB, BORN_BIG], cwd=root,
                          capture_output=True, text=True, check=True)  # fmt: skip
    (small, small_hwm, inherited), (big, big_hwm, _) = json.loads(done.stdout)
    assert inherited > 390 * 1024 > small_hwm  # the case: the parent's mark is higher
    slack = counter_slack_kib()
    assert abs(small - small_hwm) <= slack  # ours, not the inherited 400 MB
    assert big >= 600 * 1024 and abs(big - big_hwm) <= slack


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


def _switches(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt"))


def test_the_guard_is_not_woken_at_every_run(tmp_path: Path) -> None:
    # A run's start and end are written to the guard's pipe; read at every run, they woke
    # it twice a run (each wake-up a turn in a busy run queue, inside the run's wall clock).
    # It now reads them when its watch is due (10 a second) or when gpuopt ends: its
    # wake-ups follow the time the runs take, not their number.
    first = run_command("true", tmp_path, shell=None)  # the guard is started
    guard = orphans._guard
    assert guard is not None and guard.poll() is None
    # the guard has started up (its imports block on the disk) once it has recorded a run
    record = orphans._procs_file(orphans.owner_id())
    while not (record.exists() and " " in record.read_text()):
        assert guard.poll() is None, "the guard ended"
        run_command("true", tmp_path, shell=None)
    del first
    runs = 200
    before, t0 = _switches(guard.pid), time.monotonic()
    for _ in range(runs):
        assert run_command("true", tmp_path, shell=None).ok
    woken, took = _switches(guard.pid) - before, time.monotonic() - t0
    # 0.5-1.6 a run before (111-321 of 200 at load 13-18); about 10 a second now
    assert woken < runs // 4, f"the guard woke {woken} times in {runs} runs ({took:.2f} s)"


def test_output_is_kept_when_the_command_closes_its_streams_and_runs_on(tmp_path: Path) -> None:
    # The runner holds the pipes' write ends until the exit: a command that closes its own
    # output early is still timed to its exit, and what it wrote before is kept.
    res = run_command("echo out; echo err >&2; exec >&- 2>&-; sleep 0.3", tmp_path)
    assert res.ok, res.error
    assert res.stdout_tail == "out\n" and res.stderr_tail == "err\n"
    assert res.wall_s >= 0.3


def test_a_run_has_a_process_group_of_its_own_in_gpuopts_session(tmp_path: Path) -> None:
    # Not a session of its own: with the scheduler's autogroups (a group per session) a
    # new session per run made a scheduling group per run, whose start waited on a loaded
    # machine. Its own group still lets a timeout kill everything it started.
    res = run_command("cat /proc/self/stat", tmp_path, shell=None)
    assert res.ok, res.error
    fields = res.stdout_tail.rpartition(")")[2].split()
    pid, pgid, sid = int(res.stdout_tail.split()[0]), int(fields[2]), int(fields[3])
    assert pgid == pid != os.getpgrp()
    assert sid == os.getsid(0)
