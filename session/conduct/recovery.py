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

__all__ = ["RoundBusy", "live_round", "open_round", "recover_stale_rounds"]


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
    if (rnd.host or owner.get("host")) != host or not isinstance(pid, int):
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
            "notes": [*rnd.summary.get("notes", []), "its process ended without closing it"],
        }
        fixed.append(rnd)
    if fixed:
        ledger.put(*fixed)
    return fixed
