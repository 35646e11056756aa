"""The app says a FAILED/BROKEN arm in words (verdict, note, the end of its exception) in
the results pane and the review, names each workload's figure, and shows what a
correctness check found besides its error statistics: the error, warnings, stress trials
and repeat-call differences. A real sample ledger with those rows added."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from rich.console import Console
from textual.widgets import Static

from session import models as m
from session.read_model import load_view
from tui.screens.review import session_summary
from tui.screens.steps.results import ResultsPane, results_detail

TRACEBACK = "\n".join(
    ["Traceback (most recent call last):"]
    + [f'  File "frame{i}.py", line {i}' for i in range(10)]
    + ["RuntimeError: the fused kernel raised"]
)


def add_failures(ledger) -> tuple[str, str]:
    session = ledger.list(m.Session)[0]
    rnd = sorted(ledger.list(m.Round), key=lambda r: r.number)[-1]
    variant_id = rnd.variant_ids[0]
    ledger.put(m.Comparison(round_id=rnd.id, variant_id=variant_id, workload="gelu-torch",
                            n=0, verdict=m.Verdict.FAILED, error=TRACEBACK,
                            note="dropped from later blocks: its warm-up failed"))  # fmt: skip
    ledger.put(m.CorrectnessResult(
        session_id=session.id, variant_id=variant_id, workload="gelu-torch", passed=False,
        error="ValueError: candidate changed the output shape",
        warnings=["the candidate file redefines get_inputs(): the reference's drive both"],
        stress=[{"kind": "x100", "passed": True},
                {"kind": "nan_inf", "passed": False, "mismatches": 7, "nan_ref": 3,
                 "nan_new": 0, "inf_ref": 1, "inf_new": 1}],
        nondeterminism={"baseline": {}, "variant": {"out": 2}},
    ))  # fmt: skip
    return session.id, variant_id


@pytest.mark.asyncio
async def test_results_pane_says_failures_and_check_findings(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    add_failures(ledger)
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(160, 80)) as pilot:
        await built(pilot, app.pane)
        table = str(app.pane.query_one("#results-table", Static).render())
        assert app.pane.view is not None
        sid = app.pane.view.session.id
    view = load_view(ledger, sid)
    console = Console(width=200, record=True)
    console.print(results_detail(view, view.rounds[-1], ledger))
    ledger.close()
    text = table + console.export_text()
    assert "FAILED" in text and "dropped from later blocks: its warm-up failed" in text
    assert "RuntimeError: the fused kernel raised" in text and "frame2.py" not in text
    assert "ratio of " in text
    assert "ValueError: candidate changed the output shape" in text
    assert "redefines get_inputs()" in text
    assert "stress: 1 of 2 passed; FAILED nan_inf" in text and "7 mismatches" in text
    assert "nondeterministic (variant)" in text and "nondeterministic (baseline)" not in text


def test_review_summary_says_failures(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    sid, _ = add_failures(ledger)
    view = load_view(ledger, sid)
    console = Console(width=200, record=True)
    console.print(session_summary(view))
    ledger.close()
    out = console.export_text()
    assert "FAILED round" in out and "/gelu-torch: dropped from later blocks" in out
    assert "RuntimeError: the fused kernel raised" in out


HEADLINE = "failed on seed 1161227931: out NaN 0→80, max abs 2.98e-07, 80 mismatches (0.01%)"


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
async def test_the_failed_check_line_fits_the_pane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """Issue 22 (screens 3): at 80x24 the Results step's table was laid out for the pane's
    width before its scroll bar came, so the demo's failed-check line ("↳ check failed:
    failed on seed …: out NaN 0→80, …") wrapped past the indent, "NaN" alone at the left
    edge. Every line of the table fits the width it is drawn in: none wraps."""
    from scenes import SCENES, drive, make_app

    from session.ledger_access import Ledger

    monkeypatch.setenv("HOME", str(tmp_path))
    scene = next(s for s in SCENES if s.name == "06-results")
    app = make_app(scene, tmp_path)  # the sample ledger, written under HOME
    with Ledger.open(app.ledger_path) as ledger:
        for c in ledger.list(m.CorrectnessResult):
            if not c.passed:
                c.output_tail = HEADLINE + "\n(the rest of the check's output)"
                ledger.put(c)
    async with app.run_test(size=size) as pilot:
        await drive(scene, pilot)
        # drawn again once its scroll bar shows (what any resize does; a loaded full suite
        # got there first): the width must not count the bar's columns then either
        pane = app.screen.query_one(ResultsPane)
        pane.refresh_body(pane.view)
        await pilot.pause()
        table = app.screen.query_one("#results-table", Static)
        text = table.render()
        lines = text.plain.rstrip("\n").split("\n")  # type: ignore[union-attr]
        drawn = table.size.height
        width = table.size.width
    assert any("failed on seed 1161227931" in line for line in lines), lines
    assert max(len(line) for line in lines) <= width, (width, lines)
    assert drawn == len(lines), (drawn, len(lines))
