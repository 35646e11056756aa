"""The first-parent history between two commits, as a bisection walks it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from measure.git import GitError, git, resolve_commit

__all__ = ["HistoryCommit", "first_parent_history"]


@dataclass(frozen=True)
class HistoryCommit:
    sha: str
    subject: str
    author: str  # "name <email>"


def first_parent_history(repo: str | Path, good: str, bad: str) -> list[HistoryCommit]:
    """good, then every commit on bad's first-parent line after good, bad last. GitError
    when good is not an ancestor of bad on that line, or they are the same commit."""
    good_sha, bad_sha = resolve_commit(repo, good), resolve_commit(repo, bad)
    if good_sha == bad_sha:
        raise GitError(f"{good!r} and {bad!r} are the same commit: nothing to bisect")
    fmt = "--format=%H%x1f%s%x1f%an <%ae>%x1e"
    raw = git(["log", "--first-parent", "--reverse", fmt, f"{good_sha}..{bad_sha}", "--"], repo)
    commits = [_parse(entry) for entry in _entries(raw.stdout)]
    head = git(["log", "-1", fmt, good_sha, "--"], repo)
    first = [_parse(entry) for entry in _entries(head.stdout)]
    parent = git(["rev-parse", f"{commits[0].sha}^1"], repo, check=False) if commits else None
    on_line = parent is not None and parent.stdout.decode().strip() == good_sha
    if not commits or not on_line:
        raise GitError(
            f"{good!r} is not an ancestor of {bad!r} on its first-parent line: "
            "give a good commit that the bad one descends from"
        )
    return first + commits


def _entries(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    return [e.strip("\n") for e in text.split("\x1e") if e.strip("\n")]


def _parse(entry: str) -> HistoryCommit:
    sha, subject, author = [*entry.split("\x1f"), "", ""][:3]
    return HistoryCommit(sha.strip(), subject, author)
