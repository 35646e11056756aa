"""The results pane alone: it shows the round's verdicts and asks to confirm a residual."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample
from rich.console import Console
from textual.widgets import Static

from session import models as m
from tui.screens.pane_messages import AskResidual
from tui.screens.steps.results import ResultsPane


@pytest.mark.asyncio
async def test_results_pane_shows_verdicts_and_asks_for_a_residual(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    for v in ledger.list(m.Variant):
        ledger.put(
            m.Residual(
                session_id=v.session_id,
                variant_id=v.id,
                suggested=m.ResidualClass.METRIC_ONLY,
                confirmed=m.ResidualClass.AS_PREDICTED,
            )
        )
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        text = " ".join(str(s.render()) for s in app.pane.query("Static"))
        assert "FASTER" in text
        detail = Console(record=True, width=200)
        detail.print(app.pane.query_one("#results-detail", Static).content)
        shown = detail.export_text()
        assert "moved as predicted (confirmed)" in shown  # the session layer's words
        assert not any(c.value in shown for c in m.ResidualClass), shown
        await pilot.press("c")
        await pilot.pause()
        assert [type(x) for x in app.holder.got] == [AskResidual]
    ledger.close()


def test_an_output_with_new_nans_reads_nan_first() -> None:
    """error_line says the NaN count before the finite errors, as session.verdicts does."""
    from session.verdicts import error_headline
    from tui.screens.steps.results import error_line

    s = m.ErrorStats(
        output="out", max_abs=4.8e-7, max_rel=1.1e-6, nan_ref=0, nan_new=80,
        shape_equal=True, dtype_equal=True,
    )  # fmt: skip
    text = error_line(s).plain
    assert "out: NaN 0→80; finite values" in text, text
    assert error_headline(s) in text


@pytest.mark.asyncio
async def test_an_untrusted_round_says_to_record_the_baseline_again(tmp_path: Path) -> None:
    from sample_session import RID
    from textual.widgets import Static

    ledger = sample(tmp_path / "l.db")
    rnd = ledger.get(m.Round, RID)
    rnd.baseline_reproduced = False
    ledger.put(rnd)
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint = str(app.pane.query_one(".next", Static).content)
        assert "untrusted (baseline not reproduced)" in hint, hint
        # the keys of the real bindings: 5 goes to the round, g records the baseline again
        assert "record the baseline again and re-run the round (5, then g)" in hint, hint
    ledger.close()


@pytest.mark.asyncio
async def test_the_untrusted_round_hint_names_the_keys_as_remapped(tmp_path: Path) -> None:
    from sample_session import RID

    from session.guidance import untrusted_round

    ledger = sample(tmp_path / "l.db")
    rnd = ledger.get(m.Round, RID)
    rnd.baseline_reproduced = False
    ledger.put(rnd)
    app = PaneApp(ResultsPane, ledger)
    app.set_keymap({"round.rebaseline": "B", "session.goto_5": "x"})
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint = str(app.pane.query_one(".next", Static).content)
        words = untrusted_round(
            rnd.number, "baseline not reproduced", baseline_moved=True, keys="x, then B"
        )
        assert hint == f"Next: {words}", hint  # the session layer's sentence, whole
    ledger.close()


@pytest.mark.asyncio
async def test_a_variant_whose_runs_fell_into_two_modes_says_so_under_trust(
    tmp_path: Path,
) -> None:
    """Its verdict is untrusted (session.verdicts.two_modes): the detail says why, beside
    "no run quarantined or failed", which stays true."""
    ledger = sample(tmp_path / "l.db")
    rnd = ledger.list(m.Round)[-1]
    comp = ledger.list(m.Comparison, round_id=rnd.id)[0]
    name = next(v.name for v in ledger.list(m.Variant) if v.id == comp.variant_id)
    rnd.summary = {
        **rnd.summary,
        "timing_flags": [{"arm": name, "arm_id": comp.variant_id, "workload": comp.workload,
                          "text": f"{name}/{comp.workload}: values split into two modes"}],
    }  # fmt: skip
    ledger.put(rnd)
    app = PaneApp(ResultsPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        detail = Console(record=True, width=200)
        detail.print(app.pane.query_one("#results-detail", Static).content)
        shown = detail.export_text()
    assert f"the runs of {name} on {comp.workload} fell into two modes" in shown, shown
    ledger.close()
