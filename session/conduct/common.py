"""What every part of conducting shares: progress reports, the errors, small helpers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.git import repo_root
from measure.redact import redact
from session import bands, errors
from session import models as m
from session.ledger_port import LedgerLike

# Shared with session.variants, which lies below conduct: their home is session.snapshots.
from session.snapshots import cleanup_stale_worktrees as cleanup_stale_worktrees
from session.snapshots import snapshot_model as snapshot_model

BASELINE_ARM = "baseline"
OUTPUT_TAIL = 4096

# The families of session.errors: one root, a front end maps each to what it does.
BadInput = errors.BadInput
GateRefused = errors.GateRefusal
ConductError = errors.ConductError


class WorkloadBroken(errors.ConductError):
    """A workload that cannot run at all (its first run failed): broken, not noisy."""


@dataclass
class Progress:
    phase: str  # "snapshot" | "baseline" | "setup" | "round" | "check" | "cleanup" | "done"
    message: str
    block: int = 0
    max_blocks: int = 0
    runs_done: int = 0
    runs_total: int = 0
    eta_s: float | None = None
    comparisons: list[m.Comparison] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)  # variant ids: verdicts not shown


ProgressFn = Callable[[Progress], None] | None


def say(progress: ProgressFn, p: Progress) -> None:
    if progress is not None:
        progress(p)


def subdir(session: m.Session) -> Path:
    """Where in the checkout the session's repository path lies (runs start there)."""

    here = Path(session.repo).expanduser().resolve()
    try:
        return here.relative_to(repo_root(here).resolve())
    except ValueError:
        return Path()


def tail(text: str, limit: int = OUTPUT_TAIL) -> str:
    return text[-limit:]


def one_line(exc: BaseException) -> str:
    """An error's first line, as stored: no secret of the environment in it."""

    text = str(exc).strip().splitlines()
    return redact(text[0]) if text else type(exc).__name__


def with_room(ledger: LedgerLike, write: Callable[[], Any]) -> Any:
    """Do `write`; if it fails, give back the room reserved beside the ledger (a full
    disk) and do it once more. The second failure is raised."""
    try:
        return write()
    except Exception:
        release = getattr(ledger, "release_reserve", None)
        if release is None or not release():
            raise
    return write()


def put_closing(ledger: LedgerLike, item: Any) -> bool:
    """Record how a baseline or round ended, while an error is on its way out; whether it
    was stored. A write that fails (a full disk) is tried again once the room reserved
    beside the ledger is given back. When even that fails (a read-only or failing disk),
    the error on its way out says more than a second one would, and the next start closes
    what this process left open (recovery.recover_stale)."""
    try:
        with_room(ledger, lambda: ledger.put(item))
        return True
    except Exception:
        return False


# The band's floor and its words live in session.bands (light: `gpuopt compare` and the
# option parsing import them without the engine).
MIN_THRESHOLD = bands.MIN_THRESHOLD
band = bands.band
