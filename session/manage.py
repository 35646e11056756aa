"""Keeping a ledger's sessions in order: rename, archive, delete, and prune the snapshot
refs nothing uses any more.

What the command line (`gpuopt session …`, `gpuopt ledger prune-refs`) and the app's
session picker call. A refusal is a `session.errors` family with one line for the person.

A snapshot ref (`refs/gpuopt/snapshots/<id>`, see `measure.git`) is the only name of a
snapshot's commit: the ref of a kept variant is its code, so deleting a session pins that
commit again as `refs/gpuopt/kept/<id>` (a name `prune_refs` never lists: once no row names
the snapshot ref, a prune would remove it) unless `with_refs` says otherwise. Every ref
removed is reported with its commit, so it can be put back (`git update-ref REF COMMIT`)
while git still holds the object; `missing_refs` finds the refs a ledger's rows name that
its repositories lost (a copy of the ledger may name refs another copy's delete removed).
"""

from __future__ import annotations

import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ledger import queries
from measure.git import (
    SNAPSHOT_REF_PREFIX,
    GitError,
    common_dir,
    delete_snapshot_ref,
    has_commit,
    list_refs,
    pin_kept,
    repo_root,
)
from session import artifacts
from session import models as m
from session.conduct import live_round
from session.edits import write_fields
from session.errors import BadInput, GateRefusal, WorkFailed
from session.ledger_port import LedgerLike

__all__ = [
    "RECENT_S",
    "DeleteReport",
    "MissingRef",
    "PruneReport",
    "RefLine",
    "archive_session",
    "delete_session",
    "missing_refs",
    "prune_refs",
    "rename_session",
    "repos_lacking_refs",
    "title_problem",
]

KEPT = (
    m.DispositionChoice.KEEP_DEFAULT,
    m.DispositionChoice.KEEP_GUARDED,
    m.DispositionChoice.KEEP_LOCAL,
)
# A ref pinned this recently may belong to a baseline or variant being recorded: its row is
# written just after the ref, so "no row uses it" is not yet evidence.
RECENT_S = 15 * 60


@dataclass(frozen=True)
class RefLine:
    """One snapshot ref: its name, its commit, and what it was (for the person)."""

    ref: str
    commit: str
    what: str  # "baseline 7c1e04ad…", "variant fused (kept)", or "" when no row names it


@dataclass
class DeleteReport:
    session_id: str
    title: str
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows deleted
    refs_removed: list[RefLine] = field(default_factory=list)
    refs_kept: list[RefLine] = field(default_factory=list)  # kept variants' (no with_refs)
    kept_as: dict[str, str] = field(default_factory=dict)  # snapshot ref -> its kept/ name
    refs_left: list[tuple[RefLine, str]] = field(default_factory=list)  # could not: why
    artifacts_freed: int = 0  # bytes of saved check outputs removed


@dataclass
class PruneReport:
    repo: Path
    unused: list[RefLine] = field(default_factory=list)  # no live row names them
    recent: list[RefLine] = field(default_factory=list)  # unused, but pinned moments ago
    removed: list[RefLine] = field(default_factory=list)  # empty on a dry run
    in_use: int = 0


def _session(ledger: LedgerLike, session_id: str) -> m.Session:
    found = ledger.get(m.Session, session_id)
    if found is None:
        raise BadInput(f"no session {session_id!r} in {ledger.path}")
    return found


def _changed(ledger: LedgerLike, session_id: str, **values: object) -> m.Session:
    """The session with `values` set on its newest stored version: another writer's other
    fields stay, and one of these fields changed elsewhere meanwhile refuses it
    (EditConflict names it)."""
    read = ledger.get(m.Session, session_id)
    if read is None:
        raise BadInput(f"no session {session_id!r} in {ledger.path}")
    return write_fields(ledger, "session", read, session_id, values)


def title_problem(title: str) -> str | None:
    """Why a title cannot be a session's new title (one line), or None: a control character
    (a newline, a tab, an escape) would break every listing that shows it on one line."""
    bad = [c for c in title if unicodedata.category(c) == "Cc"]
    if bad:
        return (
            f"a title cannot hold control characters (it has {ascii(bad[0])[1:-1]}): "
            "give it on one line"
        )
    return None


def rename_session(ledger: LedgerLike, session_id: str, title: str) -> m.Session:
    """Give the session a new title (not blank, no control characters)."""
    problem = title_problem(title)
    if problem:
        raise BadInput(problem)
    return _changed(ledger, session_id, title=title)


def archive_session(ledger: LedgerLike, session_id: str, archived: bool = True) -> m.Session:
    """Set the session aside (listings leave it out unless asked), or bring it back.
    Nothing of it is removed."""
    return _changed(ledger, session_id, archived=archived)


def _kept_variant_ids(ledger: LedgerLike, session_id: str) -> set[str]:
    # Any keep ever recorded counts: a later change of mind does not make the code worthless.
    return queries.kept_variant_ids(ledger, session_id, (c.value for c in KEPT))


def _session_refs(ledger: LedgerLike, session_id: str) -> list[tuple[RefLine, bool]]:
    """Every snapshot ref the session's rows name, with whether it is a kept variant's.
    Read from the columns and the JSON, so a row that no longer validates still counts."""
    kept = _kept_variant_ids(ledger, session_id)
    out: list[tuple[RefLine, bool]] = []
    for r in queries.baseline_refs(ledger, session_id):
        out.append((RefLine(r["ref"], r["commit_"], f"baseline {r['id']}"), False))
    for r in queries.variant_refs(ledger, session_id):
        is_kept = r["id"] in kept
        what = f"variant {r['name']}{' (kept)' if is_kept else ''}"
        out.append((RefLine(r["ref"] or "", r["commit_"], what), is_kept))
    return [(line, k) for line, k in out if line.ref.startswith(SNAPSHOT_REF_PREFIX)]


def _refs_in_use(ledger: LedgerLike) -> tuple[set[str], set[str]]:
    """The snapshot refs and commits some row of the ledger names, any session's."""
    return queries.refs_in_use(ledger)


def _refusal_if_running(ledger: LedgerLike, session: m.Session) -> None:
    rnd = live_round(ledger, session)
    if rnd is None:
        return
    who = f"pid {rnd.pid} on {rnd.host}" if rnd.pid else "another process (no pid recorded)"
    raise GateRefusal(
        f"round {rnd.number} of session {session.id} is being measured by {who}, started "
        f"{rnd.started_at:%Y-%m-%d %H:%M:%S} UTC: stop it or let it end before deleting "
        "the session"
    )


def delete_session(ledger: LedgerLike, session_id: str, *, with_refs: bool = False) -> DeleteReport:
    """Delete the session and every row of it in one transaction, its saved check outputs,
    and the snapshot refs its baselines and variants pinned in its repository, except a
    kept variant's (those only `with_refs`). Refused while one of its rounds is measured."""
    session = _session(ledger, session_id)
    report = DeleteReport(session.id, session.title)
    with ledger.write() as db:
        _refusal_if_running(ledger, session)  # inside the lock: no round starts meanwhile
        refs = _session_refs(ledger, session.id)
        report.rows.update(queries.delete_session_rows(db, session.id))
        still_used, _ = _refs_in_use(ledger)  # another session's row naming the same ref
    doomed = []
    for line, kept in refs:
        if line.ref in still_used:
            continue
        if kept and not with_refs:
            _keep(session.repo, line, report)
        else:
            doomed.append(line)
    if doomed:
        removed, left = _remove_refs(session.repo, doomed)
        report.refs_removed, report.refs_left = removed, left
    report.artifacts_freed = _remove_artifacts(ledger, session.id)
    return report


def _keep(repo: str | Path, line: RefLine, report: DeleteReport) -> None:
    """Pin a kept variant's commit where no prune looks (its snapshot ref stays too: a copy
    of the ledger may still name it)."""
    try:
        report.kept_as[line.ref] = pin_kept(repo, line.ref, line.commit)
    except GitError as exc:
        report.refs_left.append((line, f"could not pin it as kept: {exc}"))
        return
    report.refs_kept.append(line)


def _remove_refs(
    repo: str | Path, lines: list[RefLine]
) -> tuple[list[RefLine], list[tuple[RefLine, str]]]:
    """Delete the refs; which went, and which are still there (with why), as git says."""
    try:
        for line in lines:
            delete_snapshot_ref(repo, line.ref)
        still = list_refs(repo)
    except GitError as exc:  # the repository moved or is gone: nothing to remove there
        return [], [(line, str(exc)) for line in lines]
    left = [(line, "git did not remove it") for line in lines if line.ref in still]
    return [line for line in lines if line.ref not in still], left


def _remove_artifacts(ledger: LedgerLike, session_id: str) -> int:
    entries = [
        e for e in artifacts.find_artifacts(ledger.path, set()) if e.session_id == session_id
    ]
    return artifacts.remove(entries, ledger.path) if entries else 0


def _pinned_at(git_dir: Path, ref: str) -> float | None:
    """When a loose ref was last written (None when packed: packing is done long after)."""
    try:
        return (git_dir / ref).stat().st_mtime
    except OSError:
        return None


def prune_refs(ledger: LedgerLike, repo: str | Path, *, dry_run: bool = True) -> PruneReport:
    """The snapshot refs of `repo` that no row of this ledger names (by ref or by commit),
    and, unless `dry_run`, their removal. A ref pinned in the last RECENT_S is listed apart
    and kept: the baseline or variant it belongs to may be being recorded."""
    try:
        root = repo_root(Path(repo).expanduser())
        pinned = {r: c for r, c in list_refs(root).items() if r.startswith(SNAPSHOT_REF_PREFIX)}
        git_dir = common_dir(root)
    except GitError as exc:
        raise BadInput(str(exc)) from None
    report = PruneReport(root)
    # Rows are read after the refs are listed: a ref whose row lands in between is in use.
    refs, commits = _refs_in_use(ledger)
    now = time.time()
    for ref, commit in sorted(pinned.items()):
        if ref in refs or commit in commits:
            report.in_use += 1
            continue
        line = RefLine(ref, commit, "")
        at = _pinned_at(git_dir, ref)
        if at is not None and now - at < RECENT_S:
            report.recent.append(line)
        else:
            report.unused.append(line)
    if not dry_run and report.unused:
        report.removed, left = _remove_refs(root, report.unused)
        if left:
            raise WorkFailed(f"{left[0][0].ref}: {left[0][1]} ({len(left)} refs left in all)")
    return report


@dataclass(frozen=True)
class MissingRef:
    """A snapshot ref a row names that its session's repository no longer has."""

    session_id: str
    repo: str
    line: RefLine
    commit_there: bool  # the object is still in the repository: `git update-ref` restores it

    def problem(self) -> str:
        """One line for `ledger check`: what is missing, and how to get it back if it can."""
        lost = f"{self.line.what} of session {self.session_id} names {self.line.ref}, "
        if self.commit_there:
            how = f"git -C {self.repo} update-ref {self.line.ref} {self.line.commit} restores it"
        else:
            how = f"its commit {self.line.commit} is gone too: that code cannot be rebuilt"
        return lost + f"missing from {self.repo} ({how})"


def missing_refs(ledger: LedgerLike) -> tuple[list[MissingRef], list[str]]:
    """The snapshot refs the ledger's rows name that their repositories lack, and the
    repositories that could not be read (moved, or on another machine: not a problem)."""
    missing: list[MissingRef] = []
    unreachable: list[str] = []
    sessions = queries.session_repos(ledger)
    by_repo: dict[str, list[str]] = {}
    for r in sessions:
        by_repo.setdefault(r["repo"], []).append(r["id"])
    for repo, ids in by_repo.items():
        try:
            present = list_refs(repo)
        except GitError:
            unreachable.append(repo)
            continue
        for sid in ids:
            for line, _ in _session_refs(ledger, sid):
                if line.ref not in present:
                    there = has_commit(repo, line.commit)
                    missing.append(MissingRef(sid, repo, line, there))
    return missing, unreachable


def repos_lacking_refs(lost: list[MissingRef]) -> list[str]:
    """One line per repository that lacks snapshot refs its ledger's rows name: how many,
    of which sessions, and how to bring them over from the clone that pinned them (a
    merged ledger names the refs of every box's clone)."""
    by_repo: dict[str, list[MissingRef]] = {}
    for item in lost:
        by_repo.setdefault(item.repo, []).append(item)
    lines = []
    for repo, items in by_repo.items():
        sessions = sorted({i.session_id for i in items})
        lines.append(
            f"{repo} lacks {len(items)} snapshot ref(s) of session(s) {', '.join(sessions)}: "
            f"git -C {repo} fetch CLONE '{SNAPSHOT_REF_PREFIX}*:{SNAPSHOT_REF_PREFIX}*' brings "
            "them from the clone that pinned them"
        )
    return lines
