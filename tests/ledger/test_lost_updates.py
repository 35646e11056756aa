"""Two gpuopt processes editing one record: both edits kept (different fields), or the
second refused with exit 2 and the stored value (the same field); the history always
says what the row holds. Issue 25, item 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ledger.lost_updates import check_hypothesis, edit_together, prepare

pytestmark = pytest.mark.slow


def test_edits_of_different_fields_both_kept(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    sid, hid = prepare(path)
    out = edit_together(
        path,
        ["hypothesis", "edit", sid, hid, "--symptom", "A", "--why", "x"],
        ["hypothesis", "edit", sid, hid, "--mechanism", "B", "--why", "y"],
    )
    assert out.codes == [0, 0], out.errors
    kept = check_hypothesis(path, hid, {"symptom": "A", "mechanism": "B"})
    assert kept.lost == [] and kept.disagree == []


def test_status_beside_an_edit_both_kept(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    sid, hid = prepare(path)
    out = edit_together(
        path,
        ["hypothesis", "status", sid, hid, "--status", "supported", "--why", "seen"],
        ["hypothesis", "edit", sid, hid, "--falsifier", "F", "--why", "y"],
    )
    assert out.codes == [0, 0], out.errors
    kept = check_hypothesis(path, hid, {"status": "supported", "falsifier": "F"})
    assert kept.lost == [] and kept.disagree == []


def test_six_fields_at_once_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    sid, hid = prepare(path)
    told = {
        "symptom": "S1",
        "mechanism": "M1",
        "preconditions": "P1",
        "predicted_effect": "E1",
        "falsifier": "F1",
        "confounders": "C1",
    }
    out = edit_together(
        path,
        *(
            ["hypothesis", "edit", sid, hid, f"--{k.replace('_', '-')}", v, "--why", "w"]
            for k, v in told.items()
        ),
    )
    assert out.codes == [0] * 6, out.errors
    kept = check_hypothesis(path, hid, told)
    assert kept.lost == [] and kept.disagree == []


def test_same_field_second_writer_refused_with_the_value(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    sid, hid = prepare(path)
    out = edit_together(
        path,
        ["hypothesis", "edit", sid, hid, "--symptom", "A", "--why", "x"],
        ["hypothesis", "edit", sid, hid, "--symptom", "B", "--why", "y"],
    )
    assert sorted(out.codes) == [0, 2], out.errors
    winner = "A" if out.codes[0] == 0 else "B"
    refused = out.errors[out.codes.index(2)]
    assert len(refused.splitlines()) == 1
    assert "symptom" in refused and repr(winner) in refused
    kept = check_hypothesis(path, hid, {"symptom": winner})
    assert kept.lost == [] and kept.disagree == []


def _session(path: Path, sid: str):  # type: ignore[no-untyped-def]
    from ledger import Ledger
    from session import models as m

    with Ledger.open(path, readonly=True) as ledger:
        return ledger.get(m.Session, sid), ledger.list(m.PreflightAnswer, session_id=sid)


def test_bottleneck_beside_a_rename_both_kept(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    sid, _ = prepare(path)
    out = edit_together(
        path,
        ["preflight", sid, "--bottleneck", "launch-bound", "--bottleneck-evidence", "many"],
        ["session", "rename", sid, "renamed"],
    )
    assert out.codes == [0, 0], out.errors
    s, _ = _session(path, sid)
    assert s.title == "renamed" and s.bottleneck.value == "launch-bound"


def test_one_preflight_question_answered_twice_at_once_refuses_one(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    sid, _ = prepare(path)
    out = edit_together(
        path,
        ["preflight", sid, "--measured", "lifetime=first"],
        ["preflight", sid, "--measured", "lifetime=second"],
    )
    assert sorted(out.codes) == [0, 2], out.errors
    winner = "first" if out.codes[0] == 0 else "second"
    assert repr(winner) in out.errors[out.codes.index(2)]
    _, answers = _session(path, sid)
    assert [a.text for a in answers] == [winner]
