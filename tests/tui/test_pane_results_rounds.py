"""Issue 22 item 8: round 2's Results showed every variant's correctness and audit lines
twice (round 1's checks and audits, then round 2's). Each round shows the checks and
audits made for it: the latest per workload made by the time it ended, by the session
layer's rule (session.verdicts.of_round), the one its verdicts rest on."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from rich.console import Console
from sample_session import BID, RID, SID, _t
from textual.widgets import Static

from session import models as m
from tui.screens.steps.results import ResultsPane


def _second_round(ledger: object) -> None:
    """Round 2 with its own checks and audits of every arm; fused's check fails in it."""
    put = ledger.put  # type: ignore[attr-defined]
    list_ = ledger.list  # type: ignore[attr-defined]
    r1 = ledger.get(m.Round, RID)  # type: ignore[attr-defined]
    r2 = r1.model_copy(update={"id": "r0und2000002", "number": 2, "started_at": _t(21),
                               "ended_at": _t(24), "baseline_id": BID})  # fmt: skip
    rows: list[object] = [r2]
    for c in list_(m.Comparison, round_id=RID):
        rows.append(c.model_copy(update={"id": c.id + "b", "round_id": r2.id}))
    for k in list_(m.CorrectnessResult, session_id=SID):
        rows.append(k.model_copy(update={"id": k.id + "b", "created_at": _t(22)}))
    for a in list_(m.Audit, session_id=SID):
        rows.append(
            a.model_copy(update={"id": a.id + "b", "created_at": _t(22), "operator_count": 9})
        )
    put(*rows)
    k1 = ledger.get(m.CorrectnessResult, "k1b")  # type: ignore[attr-defined]
    k1.passed, k1.error = False, "check exited 1"
    put(k1)


def _detail(app: PaneApp) -> str:
    out = Console(record=True, width=200)
    out.print(app.pane.query_one("#results-detail", Static).content)
    return out.export_text()


def _block(text: str, name: str) -> list[str]:
    """The detail lines of one variant (its heading up to the next heading)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(name))
    out = []
    for ln in lines[start + 1 :]:
        if ln and not ln.startswith(" "):
            break
        out.append(ln)
    return out


@pytest.mark.asyncio
async def test_each_round_shows_its_own_checks_and_audits_once(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    _second_round(ledger)
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        view = app.pane.view
        assert view is not None and len(view.rounds) == 2
        names = [v.name for v in view.variants]
        text = _detail(app)  # round 2
        for name in names:
            mine = _block(text, name)
            checks = [ln for ln in mine if ln.strip().startswith("correctness")]
            audits = [ln for ln in mine if ln.strip().startswith("audit")]
            assert len(checks) == 1 and len(audits) == 1, text
            assert "ops 9→9" in audits[0], audits  # round 2's audits, the arm's and baseline's
        fused = [ln for ln in _block(text, names[0]) if ln.strip().startswith("correctness")]
        assert "FAIL" in fused[0], text  # its check of round 2
        app.pane.action_round(-1)  # round 1: its own checks, fused passed then
        await pilot.pause()
        text = _detail(app)
        for name in names:
            mine = _block(text, name)
            assert len([ln for ln in mine if ln.strip().startswith("correctness")]) == 1, text
            audits = [ln for ln in mine if ln.strip().startswith("audit")]
            assert len(audits) == 1 and "ops 5→" in audits[0], text  # round 1's, both sides
        fused = [ln for ln in _block(text, names[0]) if ln.strip().startswith("correctness")]
        assert "pass" in fused[0] and "FAIL" not in fused[0], text
    ledger.close()
