"""A bisection's record: stored and read back whole, versions checked, its words and its
markdown (the review's line: tests/tui/test_review_bisections.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bisect_synthetic import synthetic_bisection

from ledger import Ledger
from ledger.bisections import BisectionChangedError
from session.bisect import store, words


def test_the_record_reads_back_whole_and_a_stale_write_is_refused(tmp_path: Path) -> None:
    rec = synthetic_bisection()
    with Ledger.open(tmp_path / "l.db") as ledger:
        saved = store.Saved(rec, None)
        store.save(ledger, saved)
        again = store.load(ledger, rec.id[:6])
        assert again.record == rec and again.version == 1
        store.save(ledger, again)  # version 1 -> 2
        with pytest.raises(BisectionChangedError):
            store.save(ledger, saved)  # still at version 1: someone wrote since
        assert [r.id for r in store.list_all(ledger)] == [rec.id]


def test_words_name_the_culprit_its_size_and_the_cost() -> None:
    rec = synthetic_bisection()
    text = "\n".join(words.answer_lines(rec))
    assert "the change over the band:" in text
    assert "#19 19abab" in text and "'commit 19 [x]'" in text and "A <a@b>" in text
    assert "1.30× slower" in text or "1.29× slower" in text or "1.31× slower" in text
    assert words.cost_line(rec).startswith("spent ")
    marks = {k.index: k.mark for k in words.commit_marks(rec)}
    assert marks[0] == "good" and marks[31] == "bad" and marks[19] == "change"


def test_two_changes_are_each_said_with_their_size() -> None:
    rec = synthetic_bisection(steps={9: 0.2, 25: 0.2})
    text = "\n".join(words.answer_lines(rec))
    assert "2 changes over the band, in order:" in text
    assert text.count("1.20× slower") + text.count("1.19× slower") + text.count("1.21× slower") == 2


def test_a_change_masked_under_the_band_is_said_to_lie_elsewhere() -> None:
    rec = synthetic_bisection(steps={9: 0.2, 12: -0.1, 25: 0.2})  # 0..15 moves 8% in all
    text = "\n".join(words.answer_lines(rec))
    assert "the change over the band:" in text and "#25 25abab" in text
    assert "some of the change lies elsewhere (under the band)" in text


def test_a_skipped_commit_next_to_the_culprit_is_named_as_bordering_it() -> None:
    rec = synthetic_bisection(broken=frozenset({18}))
    text = "\n".join(words.answer_lines(rec))
    assert "one of #18 18abab" in text and "#19 19abab" in text
    assert "skipped commit #18 18abababab borders it: it failed its first run (exit 1)" in text


def test_markdown_holds_the_culprit_subject_author_diff_stat_and_steps() -> None:
    rec = synthetic_bisection()
    md = words.markdown(rec, {19: " dur | 2 +-\n 1 file changed"})
    assert "## Change at 19abababab: commit 19 [x]" in md
    assert "by A <a@b>" in md and " dur | 2 +-" in md
    assert "| step | commits |" in md and "| 1 | #0 vs #31 |" in md
    assert "\n- #19 19abababab 'commit 19 [x]' by A <a@b>: 1.3" in md  # a list item, not code


def test_a_bisection_running_in_a_live_process_is_not_resumed_beside_it(tmp_path: Path) -> None:
    import os
    import socket

    from measure.worktrees import process_start
    from session.bisect import conduct
    from session.bisect.models import Status
    from session.errors import GateRefusal

    rec = synthetic_bisection()
    rec.status = Status.RUNNING
    rec.owner = {"pid": os.getpid(), "started": process_start(os.getpid()),
                 "host": socket.gethostname()}  # fmt: skip
    with Ledger.open(tmp_path / "l.db") as ledger:
        store.save(ledger, store.Saved(rec, None))
        with pytest.raises(GateRefusal, match="is running in process"):
            conduct.resume(ledger, rec.id)
        assert store.load(ledger, rec.id).version == 1  # nothing written


def test_deleting_the_session_whose_contract_it_used_keeps_the_bisection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import run_git

    from session.manage import delete_session
    from tui.cli import main

    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "f").write_text("x\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "one")
    db = tmp_path / "l.db"
    assert main(["--ledger", str(db), "new", "--repo", str(repo), "--title", "t",
                 "--workload", "w=true"]) == 0  # fmt: skip
    sid = capsys.readouterr().out.strip()
    rec = synthetic_bisection()
    rec.session_id = sid
    with Ledger.open(db) as ledger:
        store.save(ledger, store.Saved(rec, None))
        delete_session(ledger, sid)
        assert [r.id for r in store.list_all(ledger)] == [rec.id]


def test_a_sessions_torch_workload_is_timed_by_the_worker_one_process_per_run() -> None:
    from session import models as m
    from session.bisect.conduct import spec_of_session

    session = m.Session(
        title="t",
        repo="/nowhere",
        contract=m.Contract(
            workloads=[
                m.Workload.parse("shell=sleep 1"),
                m.Workload.parse("model=torch:pkg.mod:make"),
            ]
        ),
    )
    spec = spec_of_session(session, "model")
    assert "torch_worker/__main__.py" in spec.command and "time" in spec.command
    assert spec.metric_source == "json" and spec.unit == "ms" and not spec.higher
    shell = spec_of_session(session, "shell")
    assert shell.command == "sleep 1" and shell.metric_source == "wall"
    with pytest.raises(Exception, match="name one with --workload"):
        spec_of_session(session)


def test_halves_left_unresolved_are_said_once_joined() -> None:
    rec = synthetic_bisection()
    assert rec.answer is not None
    half = {"why": "unresolved half", "evidence": None, "mid": None, "detail": None}
    rec.answer["unresolved"] = [
        {"lo": 0, "hi": 15, **half},
        {"lo": 15, "hi": 18, **half},
        {"lo": 23, "hi": 31, **half},
    ]
    lines = [ln for ln in words.answer_lines(rec) if "not shown free" in ln]
    assert len(lines) == 1 and "#0..#18, #23..#31" in lines[0] and "±10%" in lines[0]
