"""What recording a baseline, a variant or a bisection step shares about snapshots: the
model of one taken, and clearing the worktrees a crashed gpuopt left behind first.

Below both session.conduct and session.variants (it imports neither), so a variant is
snapshotted without importing the conductor that later measures it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from measure import orphans
from measure.git import GitError
from measure.worktrees import cleanup_stale_worktrees as clean
from session import models as m

__all__ = ["cleanup_stale_worktrees", "snapshot_model"]


def cleanup_stale_worktrees(repo: str | Path) -> int:
    """Remove worktrees a crashed gpuopt left behind for this repository, after killing
    what it left running (in them, most likely)."""

    orphans.sweep_dead_owners()
    try:
        return clean(repo)
    except GitError:
        return 0


def snapshot_model(info: Any) -> m.Snapshot:
    return m.Snapshot(
        id=info.id,
        commit=info.commit,
        ref=info.ref,
        head=info.head,
        dirty=info.dirty,
        warnings=list(info.warnings),
    )
