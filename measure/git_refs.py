"""The git refs a variant can come from: branches and tags, each with its last commit's
subject and a diff stat against the baseline snapshot.

The one place GitPython is used. Read-only, with the safety of measure.git's subprocesses:
`--no-optional-locks`, no hook of the person's, no fsmonitor daemon, no prompt, and the
variables that could point git at another repository set to this one's own; each
repository object is closed at once."""

from __future__ import annotations

import os
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


def _open(repo: str | Path) -> git.Repo:
    r = git.Repo(repo)
    r.git.set_persistent_git_options(
        no_optional_locks=True,
        c=[f"core.hooksPath={os.devnull}", "core.fsmonitor=false", "core.splitIndex=false"],
    )
    # GitPython passes os.environ on and cannot drop a variable: a GIT_DIR (or index,
    # object store, namespace) of the caller's is overridden with this repository's own.
    common = Path(r.common_dir)
    r.git.update_environment(
        GIT_TERMINAL_PROMPT="0",
        GIT_DIR=str(r.git_dir),
        GIT_COMMON_DIR=str(common),
        GIT_OBJECT_DIRECTORY=str(common / "objects"),
        GIT_INDEX_FILE=str(Path(r.git_dir) / "index"),
        GIT_ALTERNATE_OBJECT_DIRECTORIES="",
        GIT_NAMESPACE="",
        **({"GIT_WORK_TREE": str(r.working_tree_dir)} if r.working_tree_dir else {}),
    )
    return r


def list_refs(repo: str | Path, base: str | None = None, limit: int = 40) -> list[RefInfo]:
    """Branches, then tags, of `repo` (empty when it cannot be read as a git repository)."""
    try:
        r = _open(repo)
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
