"""Round and Results tables say why rows carry intervals at two confidences and what '+N'
after INCONCLUSIVE means: a new user walking `gpuopt demo` saw 99% and 99.8% rows side by
side, and 'INCONCLUSIVE +1', with nothing on screen to explain either. The words are the
session layer's (session.verdicts.table_legend)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from rich.console import Console
from textual.widgets import Static

from session import models as m
from tui.screens.steps.results import ResultsPane
from tui.screens.steps.round import RoundPane


def _mixed(ledger: object) -> None:
    """fused FASTER on the design's 99% interval; same INCONCLUSIVE on the wider 99.8%."""
    fused = ledger.get(m.Comparison, "c1")  # type: ignore[attr-defined]
    broken = ledger.get(m.Comparison, "c2")  # type: ignore[attr-defined]
    same = ledger.get(m.Comparison, "c3")  # type: ignore[attr-defined]
    fused.confidence = broken.confidence = 0.99
    same.confidence, same.verdict, same.blocks_needed = 0.998, m.Verdict.INCONCLUSIVE, 1
    ledger.put(fused, broken, same)  # type: ignore[attr-defined]


def _text(pane: object, sel: str) -> str:
    console = Console(record=True, width=200)
    console.print(pane.query_one(sel, Static).content)  # type: ignore[attr-defined]
    return console.export_text()


@pytest.mark.asyncio
@pytest.mark.parametrize(("pane", "sel"), [(ResultsPane, "#results-table"), (RoundPane, None)])
async def test_two_confidences_and_plus_n_are_explained(tmp_path: Path, pane, sel) -> None:
    from session.verdicts import table_legend

    ledger = sample(tmp_path / "l.db")
    _mixed(ledger)
    app = PaneApp(pane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        if sel is None:
            shown = " ".join(_text(app.pane, f"#{s.id}") for s in app.pane.query(Static) if s.id)
        else:
            shown = _text(app.pane, sel)
        flat = " ".join(shown.split())
        assert "99% CI" in flat and "99.8% CI" in flat, flat
        legend = table_legend(ledger.list(m.Comparison))
        assert len(legend) == 2, legend
        for line in legend:
            assert " ".join(line.split()) in flat, (line, flat)
        assert any("99%" in x and "99.8%" in x for x in legend), legend
        assert any("+N" in x and "more blocks" in x for x in legend), legend
    ledger.close()


def test_one_confidence_and_no_inconclusive_needs_no_legend() -> None:
    from session.verdicts import table_legend

    c = m.Comparison(round_id="r", variant_id="v", workload="w", n=10, confidence=0.99,
                     verdict=m.Verdict.FASTER, ratio=0.9, ci_low=0.88, ci_high=0.92)  # fmt: skip
    assert table_legend([c]) == []
