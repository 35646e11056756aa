"""Rules about the repository a session optimizes, each said once for `new` and the baseline."""

from __future__ import annotations

from pathlib import Path


def repository_problem(path: str | Path) -> str | None:
    """Why path cannot be a session's repository (one line), or None when it is a git work
    tree (a folder inside one counts: runs start there)."""
    from measure.git import GitError, repo_root

    try:
        repo_root(path)
    except GitError as exc:
        return f"{exc}: a session's repository must be a git work tree"
    return None


def ledger_inside_problem(ledger: str | Path, repo: str | Path) -> str | None:
    """Why a ledger at this path cannot serve a session on repo (one line), or None.

    A ledger anywhere in the repository's work tree would be carried by every snapshot
    (and change under the measurement), even when the session names a subfolder."""
    from measure.git import path_inside_worktree

    if path_inside_worktree(ledger, repo):
        return (
            f"the ledger {Path(ledger).expanduser().resolve()} is inside the repository: "
            "every snapshot would carry it; choose --ledger outside the repository"
        )
    return None
