"""Issue 22 item 8 / build 2, "live truth": the round pane's live view says what really
happens while a round runs, by the session layer's own rules.

- A variant whose correctness check failed in this round reads BROKEN in the live table
  the moment the check fails (conduct says so in `Progress.failed_checks`), never FASTER
  first, although its statistics read FASTER and the view the pane holds was loaded
  before that check was made, and it stays BROKEN to the round's last report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pane_harness import PaneApp, built, sample
from sample_session import RID, SID
from textual.widgets import Static

from session import models as m
from session.conduct import Progress
from tui.screens.steps.round import RoundPane

NEW_ROUND = "r0und2000002"


def _shown(widget: Static) -> str:
    content: Any = widget.content
    return str(getattr(content, "plain", content))


def _row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(name))


@pytest.mark.asyncio
async def test_a_variant_whose_check_failed_this_round_is_broken_live_never_faster(
    tmp_path: Path,
) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        view = app.pane.view
        assert view is not None
        first = view.comparisons[RID][0]  # "fused": its check passed in round 1
        name = view.variant_name(first.variant_id)
        assert [c.passed for c in view.correctness if c.variant_id == first.variant_id] == [True]
        # round 2 runs: its check of fused fails, its statistics read FASTER
        app.context.busy = "round"
        live = first.model_copy(update={"id": "c9", "round_id": NEW_ROUND, "n": 4})
        assert live.verdict is m.Verdict.FASTER
        app.pane.progress(
            Progress(
                "round",
                "block 4 of at most 30",
                block=4,
                max_blocks=30,
                runs_done=24,
                runs_total=180,
                eta_s=40.0,
                comparisons=[live],
                failed_checks=[first.variant_id],
            )
        )
        await pilot.pause()
        text = _shown(app.pane.query_one("#round-live", Static))
        row = _row(text, name)
        assert "BROKEN" in row, text
        assert "FASTER" not in row, text
        assert "check failed" in text, text
        # the round's last report ("done") names no failed checks: still BROKEN, until the
        # view reloaded from the ledger holds the failed check itself
        app.pane.progress(Progress("done", "round 2: completed", comparisons=[live]))
        await pilot.pause()
        text = _shown(app.pane.query_one("#round-live", Static))
        assert "BROKEN" in _row(text, name) and "FASTER" not in _row(text, name), text
    ledger.close()


def test_the_live_rule_is_the_session_layers() -> None:
    """The same rule outside the app: `verdict_for` with the checks that failed this round."""
    from session.verdicts import verdict_for

    class View:
        rounds: list[m.Round] = []
        correctness: list[m.CorrectnessResult] = []

    c = m.Comparison(
        round_id=NEW_ROUND, variant_id="v1", workload="w", n=4, ratio=0.5,
        ci_low=0.4, ci_high=0.6, verdict=m.Verdict.FASTER,
    )  # fmt: skip
    assert verdict_for(View(), c).word == "FASTER"
    shown = verdict_for(View(), c, failed_checks=["v1"])
    assert shown.word == "BROKEN" and shown.broken and shown.correct is False
    assert verdict_for(View(), c, failed_checks=["v2"]).word == "FASTER"
    assert SID  # the sample's session, for the reader


def _status(app: PaneApp) -> str:
    return _shown(app.pane.query_one("#round-status", Static))


@pytest.mark.asyncio
async def test_while_the_checks_run_the_pane_says_what_runs_not_block_0_of_0(
    tmp_path: Path,
) -> None:
    """conduct reports its checks (phase "check") before any block: the pane shows what
    runs, never "block 0 of ≤0 · runs 0/0"."""
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        app.context.busy = "round"
        app.pane.show(app.pane.view)
        await pilot.pause()
        assert app.pane.query_one("#round-progress").display
        for p in (
            Progress("setup", "setup in fused: make"),
            Progress("check", "check in fused: pytest -q tests/test_softmax.py"),
            Progress("check", "numerical check of fused"),
        ):
            app.pane.progress(p)
            await pilot.pause()
            shown = _status(app)
            assert p.message in shown, shown
            assert "block 0" not in shown and "runs 0/0" not in shown, shown
            assert "ETA" not in shown, shown  # none known: none made up
        app.pane.progress(Progress("check", "numerical check of fused", eta_s=75.0))
        await pilot.pause()
        assert "ETA 1m15s" in _status(app), _status(app)  # session.format's one ETA format
        app.pane.progress(Progress("round", "block 1", block=1, max_blocks=30, runs_done=6,
                                   runs_total=180, eta_s=60.0))  # fmt: skip
        await pilot.pause()
        assert "block 1 of ≤30" in _status(app) and "runs 6/180" in _status(app), _status(app)
    ledger.close()


@pytest.mark.asyncio
async def test_while_g_records_the_baseline_again_the_round_pane_shows_it(
    tmp_path: Path,
) -> None:
    """g records the baseline again from the round pane: the pane says so while it runs,
    and shows its runs when they are reported to it, not an empty screen."""
    from sample_session import RID as _rid

    from session.read_model import load_view

    ledger = sample(tmp_path / "l.db")
    rnd = ledger.get(m.Round, _rid)
    rnd.baseline_reproduced, rnd.baseline_check = False, 0.924
    ledger.put(rnd)
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        await pilot.press("g")
        await pilot.pause()
        app.context.busy = "baseline"
        app.pane.show(load_view(ledger, SID))
        await pilot.pause()
        assert app.pane.query_one("#round-progress").display
        assert "baseline" in _status(app) and "block 0" not in _status(app), _status(app)
        app.pane.progress(Progress("baseline", "softmax: run 3 of 10", runs_done=4, runs_total=12))
        await pilot.pause()
        shown = _status(app)
        assert "softmax: run 3 of 10" in shown and "runs 4/12" in shown, shown
        assert "block" not in shown, shown
    ledger.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.slow
async def test_the_preflight_bottleneck_dropdown_stays_inside_its_dialog(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """Issue 22 item 8: the bottleneck list (b on Preflight) opened below its dialog's
    bottom border (5 rows past it at 80×24): it opens inside the dialog, every choice
    reachable."""
    from textual.widgets import OptionList, Select
    from tui_helpers import sample_ledger, settle, steady_app, step_keys

    app = steady_app(sample_ledger(tmp_path / "l.db"), session_id=SID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await step_keys(pilot, "3")
        await settle(pilot)
        await step_keys(pilot, "b")
        for _ in range(6000):  # bounds a failure only: the dialog is the event
            if app.screen.query("#dialog"):
                break
            await pilot.pause(0.01)
        dialog = app.screen.query_one("#dialog")
        select = dialog.query_one(Select)
        select.focus()
        await pilot.pause()
        await pilot.press("enter")
        overlay = select.query_one("SelectOverlay", OptionList)
        inner = dialog.region.shrink(dialog.styles.gutter)
        for _ in range(6000):  # until it is open and placed (bounds a failure only)
            await pilot.pause(0.01)
            if select.expanded and overlay.region.height and inner.contains_region(overlay.region):
                break
        assert select.expanded
        assert inner.contains_region(overlay.region), (overlay.region, inner)
        assert overlay.option_count == 7
        await pilot.press("end")  # the last choice is reachable, and shown
        await pilot.pause()
        assert overlay.highlighted == 6 and overlay.region.height >= 3
        await pilot.press("enter")
        await pilot.pause()
        assert not select.expanded and str(select.value) == "unknown", select.value
