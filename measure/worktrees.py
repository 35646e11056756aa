"""Detached worktrees where baselines and variants run, outside the person's tree.

Each worktree lives in its own folder under gpuopt's worktree directory:
`<base>/<id>/tree` is the checkout and `<base>/<id>/owner.json` says which process and
repository it belongs to. That marker (and the location) is how a later start recognises
ours after a crash and removes them, never anybody else's worktrees.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
from platformdirs import user_cache_dir

from measure.git import GitError, common_dir, git, repo_root

MARKER = "owner.json"
# No shared index files and no daemon for a checkout (measure.git adds: no hooks).
_QUIET_INDEX = ("-c", "core.splitIndex=false", "-c", "core.fsmonitor=false")
# Git LFS's smudge filter would fetch content over the network for every checkout.
_SKIP_SMUDGE = {"GIT_LFS_SKIP_SMUDGE": "1"}


def worktree_base(repo: str | Path | None = None) -> Path:
    """The folder that holds gpuopt's worktrees (GPUOPT_WORKTREES overrides the default)."""
    configured = os.environ.get("GPUOPT_WORKTREES")
    if configured:
        base = Path(configured).expanduser()
    else:
        base = Path(user_cache_dir("gpuopt")) / "worktrees"
    base = base.resolve()
    if repo is not None:
        top = Path(repo).resolve()
        if base == top or top in base.parents:
            # Never inside the person's tree: fall back to the system temporary folder.
            base = Path(tempfile.gettempdir()).resolve() / "gpuopt-worktrees"
    return base


def process_start(pid: int) -> float | None:
    """When the process `pid` started (epoch seconds), to tell it from a later one that
    took its id; None when it is gone."""
    try:
        return float(psutil.Process(pid).create_time())
    except Exception:
        return None


def _owner_alive(marker: dict[str, object]) -> bool:
    pid = marker.get("pid")
    if not isinstance(pid, int):
        return False
    started = process_start(pid)
    if started is None:
        return False
    recorded = marker.get("started")
    return not isinstance(recorded, (int, float)) or abs(started - float(recorded)) < 2.0


def add_worktree(
    repo: str | Path, commit: str, label: str = "arm", *, lfs_content: bool = False
) -> Path:
    """A detached checkout of commit in a new folder outside the repository.

    Checkout filters run as configured, except that Git LFS files stay pointers unless
    lfs_content asks for their content (GIT_LFS_SKIP_SMUDGE)."""
    root = repo_root(repo)
    base = worktree_base(root)
    slot = base / f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"
    slot.mkdir(parents=True, exist_ok=False)
    try:
        return _checkout(root, slot, commit, label, lfs_content)
    except BaseException:  # Ctrl+C or a stop signal mid-checkout too: leave nothing behind
        _discard(root, slot)
        raise


def _checkout(root: Path, slot: Path, commit: str, label: str, lfs_content: bool) -> Path:
    marker = {
        "pid": os.getpid(),
        "started": process_start(os.getpid()),
        "repo": str(common_dir(root)),
        "commit": commit,
        "label": "".join(c if c.isalnum() or c in "-_." else "-" for c in label)[:40],
    }
    (slot / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    tree = slot / "tree"
    proc = git([*_QUIET_INDEX, "worktree", "add", "--detach", "--quiet", str(tree), commit], root,
               env=None if lfs_content else _SKIP_SMUDGE, check=False)  # fmt: skip
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"could not create a worktree: {msg[-1] if msg else 'git failed'}")
    return tree


def _discard(root: Path, slot: Path) -> None:
    """Remove a worktree slot that was never handed out, whatever git had done of it."""
    tree = slot / "tree"
    if tree.exists():
        git(["worktree", "remove", "--force", "--force", str(tree)], root, check=False)
    _forget_admin(root, tree)
    shutil.rmtree(slot, ignore_errors=True)


def remove_worktree(repo: str | Path, tree: str | Path) -> None:
    """Remove one of our worktrees and its administrative entry in the repository."""
    tree = Path(tree)
    slot = tree.parent
    if not (slot / MARKER).exists():
        raise GitError(f"{tree} is not a gpuopt worktree")
    try:
        root = repo_root(repo)
    except GitError:
        root = None
    if root is not None:
        git(["worktree", "remove", "--force", "--force", str(tree)], root, check=False)
        _forget_admin(root, tree)
    shutil.rmtree(slot, ignore_errors=True)


def _forget_admin(root: Path, tree: Path) -> None:
    """Drop the repository's record of a worktree of ours whose folder is gone."""
    admin = common_dir(root) / "worktrees"
    if not admin.is_dir():
        return
    target = str(tree.resolve() if tree.exists() else tree)
    for entry in admin.iterdir():
        gitdir = entry / "gitdir"
        try:
            points_to = gitdir.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if points_to in (f"{target}/.git", str(Path(target) / ".git")):
            shutil.rmtree(entry, ignore_errors=True)


def list_worktrees(repo: str | Path) -> list[Path]:
    out = git(["worktree", "list", "--porcelain"], repo_root(repo)).stdout.decode(
        "utf-8", "replace"
    )
    return [Path(line[9:]) for line in out.splitlines() if line.startswith("worktree ")]


def cleanup_stale_worktrees(repo: str | Path) -> int:
    """Remove worktrees of ours left behind by a process that is gone; returns how many.

    Only folders under our base that carry our marker, whose owning process is no longer
    running, and which belong to this repository (or to none any more) are touched.
    """
    root = repo_root(repo)
    base = worktree_base(root)
    mine = str(common_dir(root))
    removed = 0
    if base.is_dir():
        for slot in sorted(base.iterdir()):
            marker_path = slot / MARKER
            try:
                marker = json.loads(marker_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if marker.get("repo") != mine or _owner_alive(marker):
                continue
            remove_worktree(root, slot / "tree")
            removed += 1
    # Entries of ours whose folder vanished (e.g. a cleaned temporary directory).
    for tree in list_worktrees(root):
        if base in tree.parents and not tree.exists():
            _forget_admin(root, tree)
            removed += 1
    return removed


class Worktrees:
    """Several worktrees for one job, all removed on exit (also on Ctrl+C or an error)."""

    def __init__(self, repo: str | Path):
        self.repo = repo_root(repo)
        self.trees: dict[str, Path] = {}

    def add(self, key: str, commit: str, *, lfs_content: bool = False) -> Path:
        tree = add_worktree(self.repo, commit, key, lfs_content=lfs_content)
        self.trees[key] = tree
        return tree

    def close(self) -> None:
        errors: list[str] = []
        for key, tree in list(self.trees.items()):
            try:
                remove_worktree(self.repo, tree)
            except Exception as exc:
                errors.append(str(exc))
            self.trees.pop(key, None)
        if errors:
            raise GitError("; ".join(errors))

    def __enter__(self) -> Worktrees:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            self.close()
        except GitError:
            if exc_type is None:
                raise


@contextmanager
def worktree(repo: str | Path, commit: str, label: str = "arm") -> Iterator[Path]:
    tree = add_worktree(repo, commit, label)
    try:
        yield tree
    finally:
        remove_worktree(repo, tree)
