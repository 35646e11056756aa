"""Defects found in session management: a kept variant's ref outlives prune-refs, a delete
in a copy of the ledger is noticed by the other copy's `ledger check`, and a title with a
control character is refused. Real ledgers, real git repositories, the real command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from method_factory import make_baseline, make_session, make_variant, open_ledger

from ledger import Ledger
from measure.git import KEPT_REF_PREFIX, SNAPSHOT_REF_PREFIX, list_refs, take_snapshot
from session import models as m
from session.errors import BadInput
from session.manage import RECENT_S, delete_session, missing_refs, prune_refs, rename_session
from tui.cli import main


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
    (repo / "kernel.py").write_text(text)
    info = take_snapshot(repo)
    return m.Snapshot(id=info.id, commit=info.commit, ref=info.ref, head=info.head)


def _settle(repo: Path, ref: str) -> None:
    """Make a loose ref look pinned long ago (prune-refs keeps refs of the last RECENT_S)."""
    loose = Path(_git(repo, "rev-parse", "--git-common-dir"))
    path = (loose if loose.is_absolute() else repo / loose) / ref
    long_ago = os.stat(path).st_mtime - RECENT_S - 60
    os.utime(path, (long_ago, long_ago))


def _session_with_kept(ledger: Ledger, repo: Path) -> tuple[m.Session, m.Variant, m.Baseline]:
    s = make_session(ledger).model_copy(update={"repo": str(repo)})
    ledger.put(s)
    base = make_baseline(ledger, s).model_copy(update={"snapshot": _snapshot(repo, "base")})
    kept = make_variant(ledger, s, name="fast").model_copy(
        update={"snapshot": _snapshot(repo, "fast")}
    )
    ledger.put(base, kept)
    ledger.put(
        m.Disposition(session_id=s.id, variant_id=kept.id, choice=m.DispositionChoice.KEEP_DEFAULT)
    )
    return s, kept, base


def cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def test_a_kept_variants_code_survives_prune_refs_after_its_session_is_deleted(
    tmp_path: Path, repo: Path, capsys: Any
) -> None:
    with open_ledger(tmp_path) as ledger:
        s, kept, _ = _session_with_kept(ledger, repo)
    db = tmp_path / "ledger.db"
    code, out, err = cli(capsys, "--ledger", str(db), "session", "delete", s.id, "--yes")
    assert code == 0, err
    kept_ref = KEPT_REF_PREFIX + kept.snapshot.id
    assert f"pinned as {kept_ref}, which prune-refs never removes" in out
    for ref in list_refs(repo):
        if ref.startswith(SNAPSHOT_REF_PREFIX):
            _settle(repo, ref)  # the 15 minutes have passed
    with Ledger.open(db) as ledger:
        pruned = prune_refs(ledger, repo, dry_run=False)
    assert kept.snapshot.ref in {r.ref for r in pruned.removed}  # no row names it any more
    assert list_refs(repo).get(kept_ref) == kept.snapshot.commit  # yet the code is there


def test_delete_with_refs_pins_nothing_as_kept(tmp_path: Path, repo: Path) -> None:
    with open_ledger(tmp_path) as ledger:
        s, _, _ = _session_with_kept(ledger, repo)
        delete_session(ledger, s.id, with_refs=True)
    assert not [r for r in list_refs(repo) if r.startswith("refs/gpuopt/")]


def test_a_delete_in_a_copy_is_named_by_the_other_copys_check(
    tmp_path: Path, repo: Path, capsys: Any
) -> None:
    with open_ledger(tmp_path) as ledger:
        s, kept, base = _session_with_kept(ledger, repo)
    live, copy = tmp_path / "ledger.db", tmp_path / "copy.db"
    assert cli(capsys, "--ledger", str(live), "ledger", "backup", str(copy))[0] == 0
    code, out, err = cli(capsys, "--ledger", str(copy), "session", "delete", s.id, "--yes")
    assert code == 0, err
    assert "a copy of this ledger" in err and "git update-ref" in err  # the warning
    _git(repo, "update-ref", "-d", kept.snapshot.ref)  # and a kept ref lost by hand

    code, out, _ = cli(capsys, "--ledger", str(live), "ledger", "check")
    assert code == 1
    assert "2 problem(s)" in out.splitlines()[0]
    assert (
        f"baseline {base.id} of session {s.id} names {base.snapshot.ref}, missing from {repo} "
        f"(git -C {repo} update-ref {base.snapshot.ref} {base.snapshot.commit} restores it)"
    ) in out
    assert f"variant fast (kept) of session {s.id} names {kept.snapshot.ref}" in out
    _git(repo, "update-ref", base.snapshot.ref, base.snapshot.commit)  # as the line says
    _git(repo, "update-ref", kept.snapshot.ref, kept.snapshot.commit)
    assert cli(capsys, "--ledger", str(live), "ledger", "check")[0] == 0


def test_check_says_when_the_commit_is_gone_too_and_skips_a_repository_not_here(
    tmp_path: Path, repo: Path
) -> None:
    with open_ledger(tmp_path) as ledger:
        s = make_session(ledger).model_copy(update={"repo": str(repo)})
        ledger.put(s)
        make_baseline(ledger, s)  # names a commit this repository never had
        elsewhere = make_session(ledger, sid="5e5510000002").model_copy(
            update={"repo": str(tmp_path / "on-another-machine")}
        )
        ledger.put(elsewhere)
        lost, unreachable = missing_refs(ledger)
    [one] = lost
    assert not one.commit_there and "is gone too" in one.problem()
    assert unreachable == [str(tmp_path / "on-another-machine")]


@pytest.mark.parametrize("title", ["a\nb", "tab\there", "esc\x1b[31m"])
def test_rename_refuses_a_control_character(tmp_path: Path, title: str, capsys: Any) -> None:
    with open_ledger(tmp_path) as ledger:
        s = make_session(ledger)
        with pytest.raises(BadInput, match="control characters"):
            rename_session(ledger, s.id, title)
    code, out, err = cli(
        capsys, "--ledger", str(tmp_path / "ledger.db"), "session", "rename", s.id, title
    )
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "control characters" in err


def test_a_stored_title_is_shown_escaped_once(tmp_path: Path, capsys: Any) -> None:
    with open_ledger(tmp_path) as ledger:
        s = make_session(ledger)
        ledger.put(s.model_copy(update={"title": "a\nb"}))  # stored before the rule
    db = str(tmp_path / "ledger.db")
    code, out, err = cli(capsys, "--ledger", db, "session", "delete", s.id, "--yes")
    assert code == 0, err
    assert out.startswith(f"deleted session {s.id} ('a\\nb'): ")  # one backslash, not two
