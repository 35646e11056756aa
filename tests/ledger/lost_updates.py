"""Concurrent edits of one record by real `gpuopt` processes, and what the ledger kept.

Used by tests/ledger/test_lost_updates.py and `python -m tests.benchmarks.concurrency`.

`edit_together` starts two CLI writers while this process holds the ledger's write lock,
waits until both are waiting on that lock (SQLite's busy handler sleeps: the kernel says
so in /proc/PID/syscall), then lets them go at once: the window in which a writer that
read before the other wrote would overwrite it is then always open, not open by chance.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
SLEEP_SYSCALLS = {"35", "230"}  # nanosleep, clock_nanosleep (x86_64): SQLite's busy wait
WAIT_LIMIT_S = 120.0  # only a hung writer gets near it


def prepare(path: Path) -> tuple[str, str]:
    """A ledger with one session and one hypothesis: (session id, hypothesis id)."""
    from ledger import Ledger
    from session import hypotheses as hypo
    from session import models as m

    metric = m.Metric(name="time", unit="s")
    workload = m.Workload(name="w", command="true")
    session = m.Session(
        title="edits",
        repo=str(path.parent),
        contract=m.Contract(metric=metric, workloads=[workload]),
    )
    with Ledger.open(path) as ledger:
        ledger.put(session)
        h, _ = hypo.add_hypothesis(ledger, session, title="fuse", symptom="s0", mechanism="m0")
    return session.id, h.id


def _waiting_on_lock(pid: int) -> bool:
    try:
        first = Path(f"/proc/{pid}/syscall").read_text().split()[0]
    except (OSError, IndexError):
        return False
    return first in SLEEP_SYSCALLS


@dataclass
class Outcome:
    codes: list[int]
    errors: list[str]


def edit_together(path: Path, *commands: list[str]) -> Outcome:
    """Run `gpuopt --ledger path <command>` for each command, released together."""
    hold = sqlite3.connect(path, timeout=60, isolation_level=None)
    procs: list[subprocess.Popen[str]] = []
    try:
        hold.execute("BEGIN IMMEDIATE")
        for cmd in commands:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tui", "--ledger", str(path), *cmd],
                    env=ENV,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        deadline = time.monotonic() + WAIT_LIMIT_S
        pending = list(procs)
        while pending and time.monotonic() < deadline:
            pending = [p for p in pending if p.poll() is None and not _waiting_on_lock(p.pid)]
            time.sleep(0.005)
    finally:
        hold.execute("ROLLBACK")
        hold.close()
    codes, errors = [], []
    for p in procs:
        _, err = p.communicate(timeout=WAIT_LIMIT_S)
        codes.append(p.returncode)
        errors.append(err.strip())
    return Outcome(codes, errors)


@dataclass
class Kept:
    lost: list[str] = field(default_factory=list)  # a field a writer was told is saved
    disagree: list[str] = field(default_factory=list)  # history's last word != the row


def check_hypothesis(path: Path, hid: str, told: dict[str, str]) -> Kept:
    """`told`: field -> value that a writer exited 0 for. The row must hold each, and the
    last history event of each edited field must say the row's value."""
    from ledger import Ledger
    from session import hypotheses as hypo
    from session import models as m

    kept = Kept()
    with Ledger.open(path, readonly=True) as ledger:
        h = ledger.get(m.Hypothesis, hid)
        assert h is not None
        events = hypo.history(ledger, h)
    for name, value in told.items():
        now = getattr(h, name)
        now = getattr(now, "value", now)
        if now != value:
            kept.lost.append(f"{name}: told {value!r}, row has {now!r}")
    last: dict[str, str | None] = {}
    for e in events:
        if e.field in ("status", "confidence"):
            last[e.field] = e.to_value
        elif e.field == "edited":
            for name, label in hypo.FIELD_LABELS.items():
                if e.why.startswith(f"{label}:") or e.why == f"{label} edited":
                    last[name] = e.to_value
    for name, said in last.items():
        now = getattr(h, name)
        now = getattr(now, "value", now)
        if isinstance(now, list):
            continue  # concern areas: several events may add to them
        if said != now:
            kept.disagree.append(f"{name}: history says {said!r}, row has {now!r}")
    return kept
