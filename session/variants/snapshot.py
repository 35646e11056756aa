"""Snapshotting a variant: one factor, from a git revision or a patch on the baseline."""

from __future__ import annotations

from pathlib import Path

from measure.git import (
    GitError,
    apply_patch,
    diff_stat,
    repo_root,
    require_commits,
    resolve_commit,
    snapshot_of_ref,
    take_snapshot,
)
from measure.worktrees import worktree
from session import models as m
from session.errors import BadInput, ConductError, GateRefused
from session.ledger_port import LedgerLike
from session.snapshots import cleanup_stale_worktrees, snapshot_model

__all__ = ["add_variant"]


def add_variant(
    ledger: LedgerLike,
    session: m.Session,
    name: str,
    *,
    ref: str | None = None,
    patch: str | Path | None = None,
    hypothesis_id: str | None = None,
    probe: bool = False,
) -> m.Variant:
    """Snapshot one variant (a git revision, or a patch on the baseline snapshot)."""

    if (ref is None) == (patch is None):
        raise BadInput("give exactly one of --ref GITREF or --patch FILE")
    try:
        m.Variant.model_validate(
            {"session_id": session.id, "name": name, "snapshot": {"commit": "0" * 40, "ref": "-"}}
        )
    except Exception as exc:
        raise BadInput(f"variant name {name!r}: {_first_error(exc)}") from None
    existing = ledger.list(m.Variant, session_id=session.id)
    if any(v.name == name for v in existing):
        raise BadInput(f"session {session.id} already has a variant named {name!r}")
    if hypothesis_id is not None:
        hyp = _hypothesis(ledger, session, hypothesis_id)
        hypothesis_id = hyp.id
    baseline = ledger.latest_baseline(session.id)
    cleanup_stale_worktrees(session.repo)
    try:
        if patch is not None:
            if baseline is None:
                raise GateRefused(
                    "record a baseline first: a patch applies to the baseline snapshot"
                )
            patch_path = Path(patch).expanduser()
            if not patch_path.is_file():
                raise BadInput(f"{patch}: no such patch file")
            with worktree(session.repo, baseline.snapshot.commit, "patch") as tree:
                try:
                    apply_patch(tree, patch_path)
                except GitError as exc:
                    raise BadInput(str(exc)) from None
                info = take_snapshot(tree, parent=baseline.snapshot.commit)
            source = f"patch {patch_path.resolve()}"
        else:
            assert ref is not None
            root = repo_root(session.repo)
            try:
                resolve_commit(root, ref)
            except GitError as exc:
                raise BadInput(str(exc)) from None
            info = snapshot_of_ref(session.repo, ref)
            source = f"ref {ref}"
        against = baseline.snapshot.commit if baseline else require_commits(session.repo)
        stat, files = diff_stat(session.repo, against, info.commit)
    except GitError as exc:
        raise ConductError(str(exc)) from None
    if baseline is None:
        stat = f"(no baseline yet: diff against HEAD)\n{stat}"
    variant = m.Variant(
        session_id=session.id,
        name=name,
        hypothesis_id=hypothesis_id,
        snapshot=snapshot_model(info),
        kind=m.VariantKind.PROBE if probe else m.VariantKind.CHANGE,
        source=source,
        diff_stat=stat,
        files_changed=files,
    )
    ledger.put(variant)
    return variant


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        e = errors()[0]
        return str(e["msg"]).removeprefix("Value error, ")
    return str(exc)


def _hypothesis(ledger: LedgerLike, session: m.Session, ref: str) -> m.Hypothesis:
    found = [
        h
        for h in ledger.list(m.Hypothesis, session_id=session.id)
        if h.id == ref or h.id.startswith(ref)
    ]
    if not found:
        raise BadInput(f"no hypothesis {ref!r} in session {session.id}")
    exact = [h for h in found if h.id == ref]
    if exact:
        return exact[0]
    if len(found) > 1:
        raise BadInput(f"{ref!r} matches several hypotheses: give more characters")
    return found[0]
