"""The git refs a variant can come from: branches and tags, each with its last commit's
subject and a diff stat against the baseline snapshot (GitPython, read-only: it never
touches the index or the working tree, and each repository object is closed at once)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

SAME_TREE = "same tree as the baseline"


@dataclass(frozen=True)
class RefInfo:
    name: str  # "fused", "v1.2"
    kind: str  # "branch" or "tag"
    subject: str  # the last commit's first line
    stat: str  # "1 file, +3 −2" against the baseline snapshot ("" without one)

    def label(self) -> str:
        parts = [self.name, self.subject]
        if self.stat:
            parts.append(self.stat)
        return " · ".join(parts)


def list_refs(repo: str | Path, base: str | None = None, limit: int = 40) -> list[RefInfo]:
    """Branches, then tags, of `repo` (empty when it cannot be read as a git repository)."""
    try:
        r = git.Repo(repo)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, OSError):
        return []
    try:
        out: list[RefInfo] = []
        for kind, refs in (("branch", r.branches), ("tag", r.tags)):
            for ref in list(refs)[:limit]:
                try:
                    commit = ref.commit
                except (ValueError, git.GitCommandError):
                    continue  # a tag of a tree or a blob: not a variant
                out.append(
                    RefInfo(ref.name, kind, str(commit.summary), _stat(r, base, commit.hexsha))
                )
        return out
    finally:
        r.close()


def _stat(r: git.Repo, base: str | None, commit: str) -> str:
    if not base:
        return ""
    try:
        files = r.commit(base).diff(commit)
        numstat = r.git.diff("--numstat", base, commit)
    except (ValueError, git.GitCommandError, git.BadName):
        return ""
    added = removed = 0
    for line in numstat.splitlines():
        a, d, *_ = line.split("\t")
        added += int(a) if a.isdigit() else 0
        removed += int(d) if d.isdigit() else 0
    if not files:
        return SAME_TREE
    n = len(files)
    return f"{n} file{'s' if n != 1 else ''}, +{added} −{removed}"
