"""`gpuopt session rename|archive|delete` and `gpuopt ledger prune-refs`, end to end: a real
session with a real baseline and variants in a real git repository."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from measure.worktrees import process_start
from session import models as m
from tui.cli import main

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
PREFIX = "refs/gpuopt/snapshots/"


def cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def gpuopt(*argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *argv], capture_output=True, text=True, env=ENV,
        cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL, **kw,
    )  # fmt: skip


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def snapshot_refs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", PREFIX)
    return dict(line.split() for line in out.splitlines())


class Made:
    def __init__(self, db: Path, repo: Path, sid: str):
        self.db, self.repo, self.sid = db, repo, sid
        self.args = ("--ledger", str(db))

    def variant(self, name: str) -> m.Variant:
        with Ledger.open(self.db) as ledger:
            return ledger.variant(self.sid, name)


@pytest.fixture
def made(tmp_path: Path, capsys: Any) -> Made:
    """A session with a recorded baseline and two variants (`tried` and `kept`, the second
    with a keep disposition), each pinned under refs/gpuopt/snapshots/. Made through the
    CLI in this process: four interpreters started per test were most of this module's
    time, and the commands that need their own process (signals, a terminal) start one."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "k.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=me@example.com", "-c", "user.name=me", "commit", "-qm", "one")
    db = tmp_path / "ledger.db"
    code, out, err = cli(capsys, "--ledger", str(db), "new", "--repo", str(repo), "--title",
                         "softmax", "--workload", "w=true")  # fmt: skip
    assert code == 0, err
    sid = out.strip()
    # the baseline's own verdict does not matter here (`true` may look drifting): its row
    # and its snapshot ref do
    code, _, err = cli(capsys, "--ledger", str(db), "baseline", sid, "--runs", "2",
                       "--threshold", "0.5")  # fmt: skip
    assert code in (0, 1), err
    steps = []
    for name, text in (("tried", "x = 2\n"), ("kept", "x = 3\n")):
        git(repo, "checkout", "-qb", name, "master" if name == "tried" else "tried")
        (repo / "k.py").write_text(text)
        git(repo, "-c", "user.email=me@example.com", "-c", "user.name=me", "commit", "-qam", name)
        steps.append(["variant", "add", sid, "--name", name, "--ref", name])
    git(repo, "checkout", "-q", "master")
    for step in steps:
        code, _, err = cli(capsys, "--ledger", str(db), *step)
        assert code == 0, (step, err)
    with Ledger.open(db) as ledger:
        assert ledger.latest_baseline(sid) is not None
        kept = ledger.variant(sid, "kept")
        ledger.put(
            m.Disposition(
                session_id=sid, variant_id=kept.id, choice=m.DispositionChoice.KEEP_GUARDED
            )
        )
    assert len(snapshot_refs(repo)) == 3
    return Made(db, repo, sid)


def listed(capsys: Any, db: Path, *more: str) -> list[dict[str, Any]]:
    code, out, _ = cli(capsys, "--ledger", str(db), "sessions", "--json", *more)
    assert code == 0
    return json.loads(out)


# ---------------------------------------------------------------------------- rename, archive


def test_rename_and_a_blank_title(capsys: Any, tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        s = m.Session(
            title="old", repo="/r", contract=m.Contract(workloads=[m.Workload.parse("w=true")])
        )
        ledger.put(s)
    code, out, err = cli(capsys, "--ledger", str(db), "session", "rename", s.id[:6], "new title")
    assert code == 0, err
    assert out.strip() == f"session {s.id} is now titled 'new title'"
    assert [r["title"] for r in listed(capsys, db)] == ["new title"]
    code, out, err = cli(capsys, "--ledger", str(db), "session", "rename", s.id, "  ")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "title" in err
    code, _, err = cli(capsys, "--ledger", str(db), "session", "rename", "zzzz", "x")
    assert code == 2 and "no session 'zzzz'" in err


def test_archive_leaves_the_listing_and_undo_brings_it_back(capsys: Any, tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        s = m.Session(
            title="t", repo="/r", contract=m.Contract(workloads=[m.Workload.parse("w=true")])
        )
        ledger.put(s)
    code, out, _ = cli(capsys, "--ledger", str(db), "session", "archive", s.id)
    assert code == 0 and "archived" in out
    assert listed(capsys, db) == []
    assert [r["archived"] for r in listed(capsys, db, "--all")] == [True]
    code, out, _ = cli(capsys, "--ledger", str(db), "session", "archive", s.id, "--undo")
    assert code == 0 and "back" in out
    assert [r["id"] for r in listed(capsys, db)] == [s.id]


# ---------------------------------------------------------------------------- delete


@pytest.mark.slow
def test_delete_off_a_terminal_needs_yes(made: Made) -> None:
    result = gpuopt(*made.args, "session", "delete", made.sid)
    assert result.returncode == 2 and result.stdout == ""
    assert "--yes" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert len(snapshot_refs(made.repo)) == 3
    with Ledger.open(made.db) as ledger:
        assert ledger.get(m.Session, made.sid) is not None


@pytest.mark.slow
def test_delete_removes_the_session_and_its_refs_but_a_kept_variants(
    made: Made, capsys: Any
) -> None:
    refs = snapshot_refs(made.repo)
    kept = made.variant("kept")
    tried = made.variant("tried")
    code, out, err = cli(capsys, *made.args, "session", "delete", made.sid, "--yes")
    assert code == 0, err
    assert snapshot_refs(made.repo) == {kept.snapshot.ref: kept.snapshot.commit}
    lines = out.splitlines()
    assert lines[0].startswith(f"deleted session {made.sid} ('softmax'): ")
    # each removed ref with its commit, so `git update-ref REF COMMIT` can put it back
    assert f"  removed {tried.snapshot.ref} {refs[tried.snapshot.ref]} (variant tried)" in lines
    assert any(line.startswith(f"  kept    {kept.snapshot.ref} ") for line in lines)
    assert listed(capsys, made.db, "--all") == []
    with Ledger.open(made.db) as ledger:
        assert ledger.check() == []
        assert sum(v for k, v in ledger.counts().items() if v) == 0


@pytest.mark.slow
def test_delete_with_refs_leaves_no_snapshot_ref(made: Made, capsys: Any) -> None:
    code, _, err = cli(capsys, *made.args, "session", "delete", made.sid, "--yes", "--with-refs")
    assert code == 0, err
    assert snapshot_refs(made.repo) == {}
    assert git(made.repo, "branch", "--list", "kept") != ""  # the person's branches stay


@pytest.mark.slow
def test_delete_is_refused_while_a_round_is_measured(made: Made, capsys: Any) -> None:
    with Ledger.open(made.db) as ledger:
        base = ledger.latest_baseline(made.sid)
        assert base is not None
        pid, host = os.getpid(), socket.gethostname()
        owner = {"pid": pid, "host": host, "started": process_start(pid)}
        ledger.put(m.Round(session_id=made.sid, baseline_id=base.id, pid=pid, host=host,
                           summary={"owner": owner}))  # fmt: skip
    code, out, err = cli(capsys, *made.args, "session", "delete", made.sid, "--yes")
    assert code == 2 and out == ""
    assert f"being measured by pid {pid} on {host}" in err
    assert len(snapshot_refs(made.repo)) == 3


def _answer(made: Made, answer: bytes) -> tuple[int, str]:
    """`gpuopt session delete` on a pseudo-terminal, answering its question."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", *made.args, "session", "delete", made.sid],
        stdin=slave, stdout=slave, stderr=slave, env=ENV, cwd=ROOT,
    )  # fmt: skip
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while b"[y/N]" not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 1)[0]:
            seen += os.read(master, 4096)
    os.write(master, answer)
    while select.select([master], [], [], 10)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return proc.wait(timeout=30), seen.decode()


@pytest.mark.slow
def test_on_a_terminal_delete_asks_first(made: Made) -> None:
    code, text = _answer(made, b"n\n")
    assert f"Delete session {made.sid} ('softmax')" in text
    assert code == 1 and "nothing deleted" in text
    assert len(snapshot_refs(made.repo)) == 3
    code, text = _answer(made, b"y\n")
    assert code == 0 and f"deleted session {made.sid}" in text
    assert len(snapshot_refs(made.repo)) == 1  # the kept variant's


# ---------------------------------------------------------------------------- prune-refs


@pytest.mark.slow
def test_prune_refs_lists_then_removes_what_no_row_uses(made: Made, capsys: Any) -> None:
    kept = made.variant("kept")
    assert cli(capsys, *made.args, "session", "delete", made.sid, "--yes")[0] == 0
    args = (*made.args, "ledger", "prune-refs", "--repo", str(made.repo))
    code, out, _ = cli(capsys, *args, "--dry-run")
    assert code == 0
    assert f"kept {kept.snapshot.ref} {kept.snapshot.commit} (pinned in the last 15 minutes)" in out
    git_dir = Path(git(made.repo, "rev-parse", "--absolute-git-dir"))
    an_hour_ago = time.time() - 3600
    os.utime(git_dir / kept.snapshot.ref, (an_hour_ago, an_hour_ago))
    code, out, _ = cli(capsys, *args, "--dry-run")
    assert out.splitlines()[0] == f"would delete {kept.snapshot.ref} {kept.snapshot.commit}"
    assert len(snapshot_refs(made.repo)) == 1
    code, out, _ = cli(capsys, *args, "--json")
    report = json.loads(out)
    assert [r["ref"] for r in report["removed"]] == [kept.snapshot.ref]
    assert snapshot_refs(made.repo) == {}


@pytest.mark.slow
def test_prune_refs_keeps_what_the_ledger_uses(made: Made, capsys: Any) -> None:
    code, out, _ = cli(capsys, *made.args, "ledger", "prune-refs", "--repo", str(made.repo))
    assert code == 0 and out.strip().endswith("; 3 in use by the ledger")
    assert len(snapshot_refs(made.repo)) == 3


def test_prune_refs_outside_a_repository(capsys: Any, tmp_path: Path) -> None:
    Ledger.open(tmp_path / "l.db").close()
    code, out, err = cli(capsys, "--ledger", str(tmp_path / "l.db"), "ledger", "prune-refs",
                         "--repo", str(tmp_path))  # fmt: skip
    assert code == 2 and out == "" and "not inside a git repository" in err
