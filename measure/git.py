"""Git snapshots that never touch the person's working tree, index, HEAD or branches.

A snapshot is a commit of the exact tree as it is on disk (staged, unstaged and untracked
files, `.gitignore` honoured), made through a temporary copy of the index and pinned under
`refs/gpuopt/snapshots/<id>`. Plain `git` subprocesses (`--no-optional-locks`): fast, no
long-lived library state, and no index refresh behind the person's back; no hook of the
person's runs in any of them. Clean filters (git-lfs) run as for the person's own `git add`.
"""

from __future__ import annotations

import contextvars
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from measure.errors import WorkFailed

SNAPSHOT_REF_PREFIX = "refs/gpuopt/snapshots/"
# A kept variant's code outlives its session under this name: no prune ever lists it.
KEPT_REF_PREFIX = "refs/gpuopt/kept/"
LARGE_UNTRACKED_BYTES = 50 * 1000 * 1000
LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"

# Nothing in a snapshot depends on the person's git identity or signing configuration.
_IDENTITY = {
    "GIT_AUTHOR_NAME": "gpuopt",
    "GIT_AUTHOR_EMAIL": "gpuopt@localhost",
    "GIT_COMMITTER_NAME": "gpuopt",
    "GIT_COMMITTER_EMAIL": "gpuopt@localhost",
}
# No daemon started and no shared index files written on the person's behalf.
_QUIET_INDEX = ("-c", "core.fsmonitor=false", "-c", "core.splitIndex=false")
# No hook of the person's runs: `git add` on the temporary index would fire
# post-index-change, `update-ref` reference-transaction, a checkout post-checkout.
_NO_HOOKS = ("-c", f"core.hooksPath={os.devnull}")
# Variables that would point git at another repository or index than the one we mean.
_STRIP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


class GitError(WorkFailed):
    """A git operation that cannot go on; the message is one line for the person."""


@dataclass
class SnapshotInfo:
    id: str
    commit: str
    ref: str
    tree: str
    head: str | None
    dirty: bool = False
    warnings: list[str] = field(default_factory=list)


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _STRIP}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    env.update(extra or {})
    return env


def git(
    args: Sequence[str],
    cwd: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git --no-optional-locks ARGS` in cwd, with no hook of the person's; raises
    GitError with git's own last line."""
    try:
        proc = _run_waking(
            ["git", "--no-optional-locks", *_NO_HOOKS, *args], cwd=str(cwd), env=git_env(env),
            input=input,
        )  # fmt: skip
    except FileNotFoundError as exc:
        if not Path(cwd).is_dir():
            raise GitError(f"{cwd}: no such directory") from exc
        raise GitError("git is not installed (or not on PATH)") from exc
    if check and proc.returncode != 0:
        raise GitError(f"git {_command(args)} failed: {_last_line(proc.stderr or proc.stdout)}")
    return proc


WAKE_S = 0.25  # the longest git is waited on without Python's signal handlers running


def _run_waking(
    argv: list[str], *, cwd: str, env: dict[str, str], input: bytes | None
) -> subprocess.CompletedProcess[bytes]:
    """subprocess.run's capture, waited on WAKE_S at a time: a Ctrl+C (or stop signal)
    taken off the wait (just before poll() begins, or on another thread) interrupts no
    wait, and with one wait to the end its handler would run only when git ends: never,
    for a checkout filter that waits on the person (a loaded suite run hung so)."""
    stdin = subprocess.PIPE if input is not None else None
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        try:
            given = input
            while True:
                try:
                    out, err = proc.communicate(given, timeout=WAKE_S)
                    break
                except subprocess.TimeoutExpired:
                    given = None  # sent once; a retry resumes where it was
        except BaseException:  # Ctrl+C too: git goes with it, as subprocess.run has it
            proc.kill()
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _command(args: Sequence[str]) -> str:
    """The git command's name in args (past any `-c key=value` pairs)."""
    i = 0
    while i < len(args) and args[i] == "-c":
        i += 2
    return args[i] if i < len(args) else "git"


def _out(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stdout.decode("utf-8", "replace").strip()


def _last_line(data: bytes) -> str:
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


# ------------------------------------------------------------------------------- repository


def repo_root(path: str | Path) -> Path:
    """The top of the work tree that contains path; GitError when there is none."""
    p = _expanded(path)
    if not p.exists():
        raise GitError(f"{p}: no such file or directory")
    if not p.is_dir():
        p = p.parent
    proc = git(["rev-parse", "--show-toplevel"], p, check=False)
    if proc.returncode != 0:
        raise GitError(f"{p} is not inside a git repository")
    top = _out(proc)
    if not top:
        raise GitError(f"{p} is inside a git directory, not a work tree")
    return Path(top)


def path_inside_worktree(path: str | Path, repo: str | Path) -> bool:
    """Whether path lies in the work tree that contains repo (its top, not only the folder
    named; its .git included), after symlinks: every snapshot of repo would carry it."""
    repo_dir = _expanded(repo).resolve()
    try:
        top = repo_root(repo_dir).resolve()
    except GitError:
        top = repo_dir
    where = _expanded(path).resolve()
    return where == top or top in where.parents


def _expanded(path: str | Path) -> Path:
    """path with ~ expanded where it can be (`~nobody` stays as written)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)


def head_commit(repo: str | Path) -> str | None:
    proc = git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], repo, check=False)
    return _out(proc) if proc.returncode == 0 and _out(proc) else None


def require_commits(repo: str | Path) -> str:
    head = head_commit(repo)
    if head is None:
        raise GitError(
            f"{repo} has no commits yet: commit something first, so a snapshot has a parent"
        )
    return head


def resolve_commit(repo: str | Path, ref: str) -> str:
    if not ref.strip() or ref.startswith("-"):
        raise GitError(f"{ref!r} is not a git revision")
    proc = git(
        ["rev-parse", "--verify", "-q", "--end-of-options", f"{ref}^{{commit}}"], repo, check=False
    )
    commit = _out(proc)
    if proc.returncode != 0 or not commit:
        raise GitError(f"{ref!r} names no commit in {repo}")
    return commit


def git_path(repo: str | Path, name: str) -> Path:
    """Absolute path of a file in the git directory (`index`, ...), worktree-aware."""
    p = Path(_out(git(["rev-parse", "--git-path", name], repo)))
    return p if p.is_absolute() else Path(repo) / p


def common_dir(repo: str | Path) -> Path:
    p = Path(_out(git(["rev-parse", "--git-common-dir"], repo)))
    return (p if p.is_absolute() else Path(repo) / p).resolve()


def list_refs(repo: str | Path) -> dict[str, str]:
    out = _out(git(["for-each-ref", "--format=%(refname) %(objectname)"], repo))
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


# ------------------------------------------------------------------------------- status


@dataclass
class _Status:
    dirty: bool = False
    untracked: list[str] = field(default_factory=list)
    dirty_submodules: list[str] = field(default_factory=list)
    submodules: bool = False
    nested_repos: list[str] = field(default_factory=list)


def _status(repo: Path) -> _Status:
    raw = git(
        [*_QUIET_INDEX, "status", "--porcelain=v2", "-z", "--untracked-files=all",
         "--ignore-submodules=none"],
        repo,
    ).stdout  # fmt: skip
    st = _Status()
    parts = raw.split(b"\0")
    i = 0
    while i < len(parts):
        entry = parts[i].decode("utf-8", "surrogateescape")
        i += 1
        if not entry:
            continue
        kind = entry[0]
        if kind == "?":
            st.dirty = True
            if entry.endswith("/"):  # only a nested repository is listed as a folder
                st.nested_repos.append(entry[2:].rstrip("/"))
            else:
                st.untracked.append(entry[2:])
            continue
        if kind in "12u":
            st.dirty = True
            fields = entry.split(" ")
            sub = fields[2]
            n_fixed = {"1": 8, "2": 9, "u": 10}[kind]
            path = " ".join(fields[n_fixed:])
            if kind == "2":
                i += 1  # the original path of a rename follows
            if sub.startswith("S") and ("M" in sub[2:] or "U" in sub[2:]):
                st.dirty_submodules.append(path)
    st.submodules = (repo / ".gitmodules").exists()
    return st


def _warnings(repo: Path, st: _Status) -> list[str]:
    warnings: list[str] = []
    large: list[tuple[str, int]] = []
    total = 0
    for rel in st.untracked:
        try:
            size = (repo / rel).lstat().st_size
        except OSError:
            continue
        total += size
        if size > LARGE_UNTRACKED_BYTES:
            large.append((rel, size))
    if large:
        shown = ", ".join(f"{p} ({s / 1e6:.0f} MB)" for p, s in large[:5])
        more = f" and {len(large) - 5} more" if len(large) > 5 else ""
        warnings.append(
            f"untracked files over 50 MB are hashed into the snapshot: {shown}{more}"
            " (add them to .gitignore to leave them out)"
        )
    elif total > LARGE_UNTRACKED_BYTES:
        warnings.append(
            f"{total / 1e6:.0f} MB of untracked files are hashed into the snapshot"
            " (add them to .gitignore to leave them out)"
        )
    if st.dirty_submodules:
        warnings.append(
            "submodules with uncommitted changes (not in the snapshot): "
            + ", ".join(st.dirty_submodules[:10])
        )
    elif st.submodules:
        warnings.append("the repository has submodules: worktrees hold only their recorded commits")
    if st.nested_repos:
        warnings.append(
            "untracked nested git repositories are not in the snapshot (a worktree holds an "
            "empty folder for each; make them submodules, or add them to .gitignore): "
            + ", ".join(st.nested_repos[:10])
            + (" ..." if len(st.nested_repos) > 10 else "")
        )
    lfs = _lfs_files(repo)
    if lfs:
        pointers = [p for p in lfs if _is_lfs_pointer(repo / p)]
        if pointers:
            warnings.append(
                f"{len(pointers)} Git LFS files are pointers, not content: "
                + ", ".join(pointers[:5])
                + (" ..." if len(pointers) > 5 else "")
            )
        else:
            warnings.append(
                f"{len(lfs)} files are stored with Git LFS: the snapshot records them through "
                "git-lfs's clean filter, and worktrees hold their pointers, not their content"
            )
    return warnings


def _lfs_files(repo: Path) -> list[str]:
    if not any((repo / name).exists() for name in (".gitattributes", ".lfsconfig")):
        info = git_path(repo, "info/attributes")
        if not info.exists():
            return []
    proc = git(["ls-files", "-z", "--", ":(attr:filter=lfs)"], repo, check=False)
    if proc.returncode != 0:
        return []
    return [p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p]


def _is_lfs_pointer(path: Path) -> bool:
    try:
        if path.is_symlink() or path.stat().st_size > 1024:
            return False
        with path.open("rb") as f:
            return f.read(len(LFS_POINTER_PREFIX)) == LFS_POINTER_PREFIX
    except OSError:
        return False


# ------------------------------------------------------------------------------- snapshots


def new_snapshot_id() -> str:
    return secrets.token_hex(6)


# Refs pinned inside the innermost `unpin_on_failure` block of this thread (or task).
_PINNED: contextvars.ContextVar[list[tuple[Path, str]] | None] = contextvars.ContextVar(
    "gpuopt_pinned", default=None
)


def pin(repo: str | Path, commit: str, snapshot_id: str) -> str:
    ref = SNAPSHOT_REF_PREFIX + snapshot_id
    git(["update-ref", ref, commit], repo)
    pinned = _PINNED.get()
    if pinned is not None:  # refs are shared by all worktrees: the common dir outlives them
        pinned.append((common_dir(repo), ref))
    return ref


@contextmanager
def unpin_on_failure(keep: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Delete every snapshot ref pinned in this block if the block raises (an exception
    type in keep excepted): a variant or baseline that is not recorded leaves no ref."""
    pinned: list[tuple[Path, str]] = []
    token = _PINNED.set(pinned)
    try:
        yield
    except BaseException as exc:
        if not isinstance(exc, keep):
            for repo, ref in pinned:
                try:
                    delete_snapshot_ref(repo, ref)
                except GitError:
                    pass  # best effort: the failure itself is what the person must see
        raise
    finally:
        _PINNED.reset(token)


def take_snapshot(
    path: str | Path, snapshot_id: str | None = None, parent: str | None = None
) -> SnapshotInfo:
    """Commit the exact tree at path, as it is on disk, and pin it under refs/gpuopt/.

    The person's index is copied to a temporary file and only the copy is updated, so the
    working tree, the index file, HEAD and every existing ref stay as they were.
    """
    repo = repo_root(path)
    head = require_commits(repo)
    st = _status(repo)
    warnings = _warnings(repo, st)
    snapshot_id = snapshot_id or new_snapshot_id()
    index = git_path(repo, "index")
    with tempfile.TemporaryDirectory(prefix="gpuopt-index-") as tmp:
        tmp_index = Path(tmp) / "index"
        if index.exists():
            # copy2 keeps the mtime, so git still re-reads files changed in the second of
            # the last index write (racy entries) instead of trusting their stat data.
            shutil.copy2(index, tmp_index)
        env = {"GIT_INDEX_FILE": str(tmp_index)}
        _show_hidden_edits(repo, env)
        unborn = [p for p in st.nested_repos if head_commit(repo / p) is None]
        leave_out = [f":(exclude,literal,top){p}" for p in unborn]
        git([*_QUIET_INDEX, "add", "-A", "--", ".", *leave_out], repo, env=env)
        tree = _out(git([*_QUIET_INDEX, "write-tree"], repo, env=env))
    commit = _out(
        git(
            ["commit-tree", "--no-gpg-sign", tree, "-p", parent or head, "-m",
             f"gpuopt snapshot {snapshot_id}"],
            repo,
            env=_IDENTITY,
        )
    )  # fmt: skip
    ref = pin(repo, commit, snapshot_id)
    # Dirty means "not HEAD's tree": git status cannot say, it trusts the index bits.
    dirty = tree != _out(git(["rev-parse", f"{head}^{{tree}}"], repo))
    return SnapshotInfo(
        id=snapshot_id, commit=commit, ref=ref, tree=tree, head=head, dirty=dirty,
        warnings=warnings,
    )  # fmt: skip


def _show_hidden_edits(repo: Path, env: Mapping[str, str]) -> None:
    """Clear, on the temporary index only, the bits that make `git add` skip a file on disk:
    assume-unchanged everywhere, skip-worktree where the file exists (an absent one is a
    sparse checkout's: it stays as recorded, not deleted)."""
    raw = git([*_QUIET_INDEX, "ls-files", "-v", "-z"], repo, env=env).stdout
    assumed: list[bytes] = []
    skipped: list[bytes] = []
    for entry in raw.split(b"\0"):
        if len(entry) < 3:
            continue
        tag, path = entry[:1], entry[2:]
        if tag.islower():
            assumed.append(path)
        if tag in (b"S", b"s") and os.path.lexists(repo / os.fsdecode(path)):
            skipped.append(path)
    # One flag per call: given both, git (2.39) applies one of them to paths from stdin.
    for flag, paths in (("--no-assume-unchanged", assumed), ("--no-skip-worktree", skipped)):
        if paths:
            git([*_QUIET_INDEX, "update-index", flag, "-z", "--stdin"], repo, env=env,
                input=b"\0".join(paths) + b"\0")  # fmt: skip


def snapshot_of_ref(repo: str | Path, gitref: str, snapshot_id: str | None = None) -> SnapshotInfo:
    """Pin an existing commit (a branch, tag or hash) as a snapshot: its tree, exactly."""
    root = repo_root(repo)
    require_commits(root)
    commit = resolve_commit(root, gitref)
    tree = _out(git(["rev-parse", f"{commit}^{{tree}}"], root))
    snapshot_id = snapshot_id or new_snapshot_id()
    ref = pin(root, commit, snapshot_id)
    return SnapshotInfo(id=snapshot_id, commit=commit, ref=ref, tree=tree, head=commit)


def delete_snapshot_ref(repo: str | Path, ref: str) -> None:
    if ref.startswith(SNAPSHOT_REF_PREFIX):
        git(["update-ref", "-d", ref], repo, check=False)


def pin_kept(repo: str | Path, snapshot_ref: str, commit: str) -> str:
    """Pin commit as `refs/gpuopt/kept/<id>` (the id of snapshot_ref): the name of a kept
    variant's code once no ledger row names its snapshot ref any more."""
    ref = KEPT_REF_PREFIX + snapshot_ref.removeprefix(SNAPSHOT_REF_PREFIX)
    git(["update-ref", ref, commit], repo)
    return ref


def has_commit(repo: str | Path, commit: str) -> bool:
    """Whether the repository still holds the commit object (a removed ref's code)."""
    if not commit or commit.startswith("-"):
        return False
    proc = git(["cat-file", "-e", f"{commit}^{{commit}}"], repo, check=False)
    return proc.returncode == 0


def apply_patch(worktree: str | Path, patch: str | Path) -> None:
    """Apply a patch file to a worktree with `git apply` (no index, no commit)."""
    p = _expanded(patch)
    if not p.is_file():
        raise GitError(f"{p}: no such patch file")
    proc = git(["apply", "--whitespace=nowarn", str(p.resolve())], worktree, check=False)
    if proc.returncode != 0:
        raise GitError(f"the patch {p.name} does not apply: {_last_line(proc.stderr)}")


def diff_stat(repo: str | Path, a: str, b: str) -> tuple[str, int]:
    """`git diff --stat a b` and the number of files changed."""
    raw = git(["diff", "--no-ext-diff", "--no-color", "--stat=100", a, b, "--"], repo).stdout
    stat = raw.decode("utf-8", "replace").rstrip()
    numstat = _out(git(["diff", "--no-ext-diff", "--numstat", "-z", a, b, "--"], repo))
    files = sum(1 for entry in numstat.split("\0") if entry.strip() and "\t" in entry)
    return stat, files
