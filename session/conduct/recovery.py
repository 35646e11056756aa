"""Rounds left behind: which round is live, which one a gone process left "running", and
opening a new round as this process's (numbered in the same write transaction)."""

from __future__ import annotations

import os
import socket
from typing import Any

from measure.worktrees import process_start
from session import models as m
from session.conduct.common import GateRefused
from session.ledger_port import LedgerLike

__all__ = [
    "RoundBusy",
    "live_round",
    "open_round",
    "owner",
    "recover_stale",
    "recover_stale_rounds",
]


class RoundBusy(GateRefused):
    """Another live process is measuring a round of this session."""


def live_round(ledger: LedgerLike, session: m.Session) -> m.Round | None:
    """A round of the session still being measured by a live process (this host's are
    checked; another host's running round counts as live, there is no telling)."""
    host = socket.gethostname()
    for rnd in ledger.list(m.Round, session_id=session.id, status=m.RoundStatus.RUNNING):
        if not _stale(rnd, host):
            return rnd
    return None


def busy(session: m.Session, first: m.Round) -> RoundBusy:
    where = f"pid {first.pid} on {first.host}" if first.pid else "another process"
    job = first.summary.get("slurm") or {}
    if job.get("job_id"):  # a Slurm job's: where to see it
        where += f" (Slurm job {job['job_id']}; gpuopt job follow {str(job.get('job', ''))[:8]})"
    return RoundBusy(
        f"round {first.number} ({first.id}) of session {session.id} is being measured "
        f"by {where}, started {first.started_at:%Y-%m-%d %H:%M:%S} UTC: "
        "wait for it to end (or stop it) before starting another"
    )


def open_round(ledger: LedgerLike, session: m.Session, rnd: m.Round) -> m.Round:
    """Record a new round as this process's, numbered in the same write transaction.

    BEGIN IMMEDIATE makes the check and the number one step: two rounds started at once
    cannot both see no live round, nor both take the same number. Rounds left "running"
    by a process of this host that is gone are closed first (stale, not live).
    """
    recover_stale(ledger)
    owner = _owner()
    with ledger.write():
        recover_stale_rounds(ledger, session)
        first = live_round(ledger, session)
        if first is not None:
            raise busy(session, first)
        rounds = ledger.list(m.Round, session_id=session.id)
        rnd.number = 1 + max((r.number for r in rounds), default=0)
        rnd.pid, rnd.host = owner["pid"], owner["host"]
        rnd.summary = {**rnd.summary, "owner": owner}
        ledger.put(rnd)
    return rnd


def _owner() -> dict[str, Any]:
    """Which process conducts a round, to recognise one left running by a crash."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": process_start(os.getpid())}


def _stale(rnd: m.Round, host: str) -> bool:
    """Left "running" by a process of this host that is gone (or is another by now)."""
    owner = rnd.summary.get("owner") or {}
    pid = rnd.pid if rnd.pid is not None else owner.get("pid")
    return _gone({**owner, "pid": pid, "host": rnd.host or owner.get("host")}, host)


def _gone(owner: dict[str, Any], host: str) -> bool:
    """The process `owner` names ran on this host and is gone (or is another by now)."""
    pid = owner.get("pid")
    if owner.get("host") != host or not isinstance(pid, int):
        return False  # another machine's, or no owner recorded: no telling
    started = process_start(pid)
    recorded = owner.get("started")
    alive = started is not None and (
        not isinstance(recorded, (int, float)) or abs(started - recorded) < 2.0
    )
    return not alive


def recover_stale_rounds(ledger: LedgerLike, session: m.Session) -> list[m.Round]:
    """Mark rounds left "running" by a process of this machine that is gone as interrupted.

    Their completed runs stay; only the status, end time and a note change.
    """
    host = socket.gethostname()
    fixed = []
    for rnd in ledger.list(m.Round, session_id=session.id, status=m.RoundStatus.RUNNING):
        if not _stale(rnd, host):
            continue
        rnd.status = m.RoundStatus.INTERRUPTED
        rnd.ended_at = m.utcnow()
        rnd.summary = {
            **rnd.summary,
            "stop_reason": "interrupted",
            "notes": [*rnd.summary.get("notes", []), f"{ENDED_UNCLOSED} ({WHY_UNCLOSED})"],
        }
        fixed.append(rnd)
    if fixed:
        ledger.put(*fixed)
    return fixed


ENDED_UNCLOSED = "its process ended without closing it"
WHY_UNCLOSED = "killed, or the ledger could not be written: full, read-only or failing"


def recover_stale(ledger: LedgerLike) -> tuple[list[m.Round], list[m.Baseline]]:
    """At the start of a baseline or round: close every round and baseline of the ledger
    that a process of this machine left open and is gone, with the reason; and keep the
    room for closing this one on a full disk (ledger.reserve). Nothing stays "running"
    without a live process."""
    hold = getattr(ledger, "hold_reserve", None)
    if hold is not None:
        hold()
    host = socket.gethostname()
    with ledger.write():
        rounds: list[m.Round] = []
        for session in ledger.list(m.Session):
            rounds += recover_stale_rounds(ledger, session)
        baselines = []
        for b in ledger.list(m.Baseline):
            if b.measured_by is None or not _gone(b.measured_by, host):
                continue
            pid = b.measured_by.get("pid")
            b.reproducibility_detail = (
                f"failed: its process (pid {pid}) ended before the baseline was closed "
                f"({WHY_UNCLOSED})"
            )
            b.measured_by = None
            baselines.append(b)
        if baselines:
            ledger.put(*baselines)
    return rounds, baselines


def owner() -> dict[str, Any]:
    """This process, as a round or baseline records the one conducting it."""
    return _owner()
