"""Sessions kept in order: rename, archive, delete (with the snapshot refs its rows pinned),
and pruning the refs no row uses; real ledgers and real git repositories."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from method_factory import make_baseline, make_session, make_variant, open_ledger
from method_full import build_full_session, texts

from ledger import Ledger
from ledger.schema import VERSIONED_TABLES
from measure.git import SNAPSHOT_REF_PREFIX, list_refs, take_snapshot
from measure.worktrees import process_start
from session import models as m
from session.errors import BadInput, GateRefusal
from session.manage import (
    RECENT_S,
    archive_session,
    delete_session,
    prune_refs,
    rename_session,
)

TABLES = (*VERSIONED_TABLES, "checklist", "telemetry_batches")


@pytest.fixture
def ledger(tmp_path: Path):
    with open_ledger(tmp_path) as lg:
        yield lg


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "me@example.com")
    _git(root, "config", "user.name", "me")
    (root / "kernel.py").write_text("def f(x):\n    return x\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "first")
    return root


def _snapshot(repo: Path, text: str) -> m.Snapshot:
    (repo / "kernel.py").write_text(text)  # a dirty tree: the snapshot holds the edit
    info = take_snapshot(repo)
    return m.Snapshot(id=info.id, commit=info.commit, ref=info.ref, head=info.head)


def _counts(ledger: Ledger) -> dict[str, int]:
    return {t: ledger.query(f"SELECT COUNT(*) AS n FROM {t}")[0]["n"] for t in TABLES}


def _stored(ledger: Ledger, sid: str) -> m.Session:
    found = ledger.get(m.Session, sid)
    assert found is not None
    return found


def _snapshot_refs(repo: Path) -> set[str]:
    return {r for r in list_refs(repo) if r.startswith(SNAPSHOT_REF_PREFIX)}


# ---------------------------------------------------------------------------- rename, archive


def test_rename_changes_the_title_and_refuses_a_blank_one(ledger: Ledger) -> None:
    s = make_session(ledger)
    renamed = rename_session(ledger, s.id, "softmax, fused at last")
    assert renamed.title == "softmax, fused at last"
    assert _stored(ledger, s.id).title == "softmax, fused at last"
    assert ledger.session_rows()[0]["title"] == "softmax, fused at last"  # the listed column
    with pytest.raises(BadInput, match="title"):
        rename_session(ledger, s.id, "   ")
    assert _stored(ledger, s.id).title == "softmax, fused at last"
    with pytest.raises(BadInput, match="no session"):
        rename_session(ledger, "nope", "x")


def test_archive_sets_aside_and_brings_back_keeping_everything(ledger: Ledger) -> None:
    s = make_session(ledger)
    make_baseline(ledger, s)
    before = _counts(ledger)
    assert archive_session(ledger, s.id).archived is True
    assert _stored(ledger, s.id).archived is True
    assert _counts(ledger) == before
    assert archive_session(ledger, s.id, archived=False).archived is False
    assert _stored(ledger, s.id).archived is False


# ---------------------------------------------------------------------------- delete


def test_delete_removes_every_row_of_the_session_and_nothing_of_another(ledger: Ledger) -> None:
    full = build_full_session(ledger, texts())
    other = make_session(ledger, sid="0the50000001")
    make_variant(ledger, other, name="other", vid="07e1a0000001")
    before = _counts(ledger)
    assert all(before[t] for t in ("runs", "comparisons", "hypothesis_events", "evidence"))
    report = delete_session(ledger, full.id)
    after = _counts(ledger)
    assert after["sessions"] == 1 and after["variants"] == 1
    assert sum(after.values()) == 2  # the other session and its variant: nothing else
    assert report.rows == {t: before[t] - after[t] for t in TABLES if before[t] != after[t]}
    assert ledger.check() == []  # foreign keys, the full-text index: all consistent
    assert ledger.search_hypotheses("the") == []  # no hit left in the index
    assert ledger.get(m.Session, other.id) is not None


def test_delete_removes_the_refs_it_pinned_but_keeps_a_kept_variants(
    ledger: Ledger, repo: Path
) -> None:
    s = make_session(ledger).model_copy(update={"repo": str(repo)})
    ledger.put(s)
    base = make_baseline(ledger, s).model_copy(update={"snapshot": _snapshot(repo, "base")})
    ledger.put(base)
    tried = make_variant(ledger, s, name="tried").model_copy(
        update={"snapshot": _snapshot(repo, "tried")}
    )
    kept = make_variant(ledger, s, name="kept", vid="7a1a00000002").model_copy(
        update={"snapshot": _snapshot(repo, "kept")}
    )
    ledger.put(tried, kept)
    ledger.put(
        m.Disposition(session_id=s.id, variant_id=tried.id, choice=m.DispositionChoice.REJECT),
        m.Disposition(session_id=s.id, variant_id=kept.id, choice=m.DispositionChoice.KEEP_DEFAULT),
    )
    assert len(_snapshot_refs(repo)) == 3

    report = delete_session(ledger, s.id)

    assert _snapshot_refs(repo) == {kept.snapshot.ref}
    assert {r.ref for r in report.refs_removed} == {base.snapshot.ref, tried.snapshot.ref}
    assert [(r.ref, r.commit, r.what) for r in report.refs_kept] == [
        (kept.snapshot.ref, kept.snapshot.commit, "variant kept (kept)")
    ]
    assert report.refs_left == []
    assert _git(repo, "cat-file", "-t", kept.snapshot.ref) == "commit"  # the kept code is there


def test_delete_with_refs_removes_a_kept_variants_ref_too(ledger: Ledger, repo: Path) -> None:
    s = make_session(ledger).model_copy(update={"repo": str(repo)})
    ledger.put(s)
    kept = make_variant(ledger, s, name="kept").model_copy(
        update={"snapshot": _snapshot(repo, "kept")}
    )
    ledger.put(kept)
    ledger.put(
        m.Disposition(session_id=s.id, variant_id=kept.id, choice=m.DispositionChoice.KEEP_LOCAL)
    )
    report = delete_session(ledger, s.id, with_refs=True)
    assert _snapshot_refs(repo) == set()
    assert [r.ref for r in report.refs_removed] == [kept.snapshot.ref]
    assert report.refs_kept == []


def test_delete_names_the_refs_it_could_not_reach(ledger: Ledger, tmp_path: Path) -> None:
    gone = tmp_path / "moved-away"
    s = make_session(ledger).model_copy(update={"repo": str(gone)})
    ledger.put(s)
    make_baseline(ledger, s)
    report = delete_session(ledger, s.id)
    assert ledger.get(m.Session, s.id) is None  # the rows go even so
    [(line, why)] = report.refs_left
    assert line.ref.startswith(SNAPSHOT_REF_PREFIX) and "no such directory" in why


def _running_round(ledger: Ledger, s: m.Session, pid: int, host: str) -> m.Round:
    base = make_baseline(ledger, s)
    owner = {"pid": pid, "host": host, "started": process_start(pid)}
    rnd = m.Round(
        session_id=s.id, baseline_id=base.id, pid=pid, host=host, summary={"owner": owner}
    )
    ledger.put(rnd)
    return rnd


@pytest.mark.parametrize("host", [socket.gethostname(), "gpu-node-17"])
def test_delete_is_refused_while_a_round_is_measured(ledger: Ledger, host: str) -> None:
    s = make_session(ledger)
    _running_round(ledger, s, os.getpid(), host)
    before = _counts(ledger)
    with pytest.raises(GateRefusal) as refused:
        delete_session(ledger, s.id)
    assert f"pid {os.getpid()} on {host}" in refused.value.reason
    assert "before deleting the session" in refused.value.reason
    assert _counts(ledger) == before


def test_a_round_left_running_by_a_gone_process_does_not_block_delete(ledger: Ledger) -> None:
    s = make_session(ledger)
    child = subprocess.Popen(["true"])
    child.wait()  # a pid of this host whose process is gone
    _running_round(ledger, s, child.pid, socket.gethostname())
    delete_session(ledger, s.id)
    assert ledger.get(m.Session, s.id) is None


def test_delete_of_no_such_session_is_bad_input(ledger: Ledger) -> None:
    with pytest.raises(BadInput, match="no session 'nope'"):
        delete_session(ledger, "nope")


# ---------------------------------------------------------------------------- prune refs


def test_prune_lists_then_removes_only_settled_refs_no_row_uses(ledger: Ledger, repo: Path) -> None:
    s = make_session(ledger).model_copy(update={"repo": str(repo)})
    ledger.put(s)
    used = make_baseline(ledger, s).model_copy(update={"snapshot": _snapshot(repo, "used")})
    ledger.put(used)
    old = _snapshot(repo, "left by a deleted session")
    recent = _snapshot(repo, "pinned a moment ago")
    loose = _git(repo, "rev-parse", "--git-common-dir")
    long_ago = os.stat(repo).st_mtime - RECENT_S - 60
    os.utime(repo / loose / old.ref, (long_ago, long_ago))
    (repo / "kernel.py").write_text("not a ref of ours")
    _git(repo, "update-ref", "refs/heads/mine", _git(repo, "rev-parse", "HEAD"))

    listed = prune_refs(ledger, repo)
    assert [r.ref for r in listed.unused] == [old.ref]
    assert [r.ref for r in listed.recent] == [recent.ref]
    assert listed.in_use == 1 and listed.removed == []
    assert len(_snapshot_refs(repo)) == 3  # a dry run removes nothing

    done = prune_refs(ledger, repo, dry_run=False)
    assert [r.ref for r in done.removed] == [old.ref]
    assert _snapshot_refs(repo) == {used.snapshot.ref, recent.ref}
    assert "refs/heads/mine" in list_refs(repo)  # never a ref outside gpuopt's


def test_prune_takes_packed_refs_as_settled(ledger: Ledger, repo: Path) -> None:
    stray = _snapshot(repo, "stray")
    _git(repo, "pack-refs", "--all")
    assert [r.ref for r in prune_refs(ledger, repo).unused] == [stray.ref]


def test_prune_keeps_a_ref_whose_commit_a_row_names(ledger: Ledger, repo: Path) -> None:
    # the same commit pinned twice (a variant of an existing ref): the commit is in use
    s = make_session(ledger).model_copy(update={"repo": str(repo)})
    ledger.put(s)
    snap = _snapshot(repo, "shared")
    ledger.put(make_baseline(ledger, s).model_copy(update={"snapshot": snap}))
    twin = f"{SNAPSHOT_REF_PREFIX}twin0000001"
    _git(repo, "update-ref", twin, snap.commit)
    _git(repo, "pack-refs", "--all")
    report = prune_refs(ledger, repo, dry_run=False)
    assert report.unused == [] and report.in_use == 2
    assert twin in list_refs(repo)


def test_prune_outside_a_repository_is_bad_input(ledger: Ledger, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(BadInput, match="not inside a git repository"):
        prune_refs(ledger, tmp_path / "plain")
