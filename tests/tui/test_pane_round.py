"""The round pane alone: a asks for the variant form, r for a round with the blocks typed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from tui.screens.pane_messages import AskVariant, StartBaseline, StartRound
from tui.screens.steps.round import RoundPane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_round_pane_asks_for_a_variant_and_a_round(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        app.pane.query_one("#field-min_blocks", Field).value = "10"
        app.pane.query_one("#field-max_blocks", Field).value = "20"
        await pilot.press("a", "r")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [AskVariant, StartRound]
        assert isinstance(got[1], StartRound)
        assert (got[1].min_blocks, got[1].max_blocks) == (10, 20)
    ledger.close()


@pytest.mark.asyncio
async def test_round_pane_read_only_asks_nothing(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RoundPane, ledger, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        await pilot.press("a", "r")
        await pilot.pause()
        assert app.holder.got == []
    ledger.close()


def _untrusted(ledger: object) -> None:
    from sample_session import RID

    rnd = ledger.get(m.Round, RID)  # type: ignore[attr-defined]
    rnd.baseline_reproduced = False
    rnd.baseline_check = 0.924
    ledger.put(rnd)  # type: ignore[attr-defined]


async def _press_g_and_record_a_new_baseline(pilot: Any, app: Any, ledger: Any) -> list[Any]:
    """g, then what the session screen does: busy while the baseline runs, a new baseline
    stored, a fresh view; returns the messages the pane posted."""
    from sample_session import SID

    from session.read_model import load_view

    await pilot.press("g")
    await pilot.pause()
    assert [type(x) for x in app.holder.got] == [StartBaseline]
    app.context.busy = "baseline"
    app.pane.show(load_view(ledger, SID))
    old = ledger.latest_baseline(SID)
    ledger.put(
        old.model_copy(
            update={"id": "ba5e00000003", "created_at": old.created_at + timedelta(hours=1)}
        )
    )
    app.context.busy = None
    app.pane.show(load_view(ledger, SID))
    await pilot.pause()
    return list(app.holder.got)


@pytest.mark.asyncio
async def test_an_untrusted_round_offers_baseline_again_and_a_rerun_as_one_key(
    tmp_path: Path,
) -> None:
    """Issue 12 item 5: g records the baseline again; once it is in, the round re-runs
    with the blocks typed."""
    from textual.widgets import Static

    ledger = sample(tmp_path / "l.db")
    _untrusted(ledger)
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint = str(app.pane.query_one(".next", Static).content)
        assert "untrusted (baseline not reproduced)" in hint and "press g" in hint, hint
        app.pane.query_one("#field-min_blocks", Field).value = "8"
        app.pane.query_one("#field-max_blocks", Field).value = "16"
        got = await _press_g_and_record_a_new_baseline(pilot, app, ledger)
        assert [type(x) for x in got] == [StartBaseline, StartRound]
        assert isinstance(got[1], StartRound) and (got[1].min_blocks, got[1].max_blocks) == (8, 16)
    ledger.close()


@pytest.mark.asyncio
async def test_g_reruns_the_round_at_the_band_and_budget_typed(tmp_path: Path) -> None:
    """A new user set the advised band with f, pressed g, and the round it re-ran went at
    the contract's ±2%: g kept the blocks typed and dropped the threshold and budget."""

    ledger = sample(tmp_path / "l.db")
    _untrusted(ledger)
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        app.pane.query_one("#field-threshold", Field).value = "0.11"
        app.pane.query_one("#field-budget", Field).value = "600"
        got = await _press_g_and_record_a_new_baseline(pilot, app, ledger)
        assert [type(x) for x in got] == [StartBaseline, StartRound]
        rerun = got[1]
        assert isinstance(rerun, StartRound)
        assert rerun.threshold == pytest.approx(0.11), rerun.threshold
        assert rerun.budget_s is not None, "the budget typed was dropped"
    ledger.close()


def test_the_round_table_marks_broken_by_the_check_of_its_workload(tmp_path: Path) -> None:
    """A variant that failed its check on another workload is not BROKEN here; one that
    failed on this one is, with the failure in words."""
    from sample_session import RID, SID

    from session.read_model import load_view
    from tui.screens.steps.round import comparison_table

    ledger = sample(tmp_path / "l.db")
    view = load_view(ledger, SID)
    fused = view.comparisons[RID][0].variant_id
    end = view.rounds[0].ended_at
    assert end is not None
    at = end - timedelta(minutes=1)
    ledger.put(
        m.CorrectnessResult(
            id="kx", session_id=SID, variant_id=fused, workload="other", passed=False,
            seeds=[0], created_at=at, error="check exited 1",
        )
    )  # fmt: skip
    view = load_view(ledger, SID)
    text = comparison_table(view, view.rounds[0], view.comparisons[RID], width=120).plain
    row = next(line for line in text.splitlines() if line.startswith(view.variant_name(fused)))
    assert "FASTER" in row and "BROKEN" not in row, text
    mine = ledger.get(m.CorrectnessResult, "k1")  # its check on this workload
    mine.passed, mine.error = False, "check exited 1"
    ledger.put(mine)
    view = load_view(ledger, SID)
    text = comparison_table(view, view.rounds[0], view.comparisons[RID], width=120).plain
    row = next(line for line in text.splitlines() if line.startswith(view.variant_name(fused)))
    assert "BROKEN" in row, text
    assert "check failed" in text or "check exited" in text, text
    ledger.close()


def test_the_round_guidance_says_it_stops_only_at_planned_looks() -> None:
    """A round reads its results only at planned looks (measure.sequential): the words
    must not promise it stops as soon as each comparison is decided."""
    from measure.sequential import LOOK_EVERY
    from session.guidance import ROUND_GUIDANCE

    assert RoundPane.GUIDANCE == ROUND_GUIDANCE
    assert "as soon as" not in ROUND_GUIDANCE
    assert "planned looks" in ROUND_GUIDANCE and f"every {LOOK_EVERY}" in ROUND_GUIDANCE


def _hint(app: PaneApp) -> str:
    from textual.widgets import Static

    return str(app.pane.query_one(".next", Static).content)


@pytest.mark.asyncio
async def test_after_a_completed_round_next_goes_to_results_not_to_the_band(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 (screens 1): a completed round's Round step said "the baseline is too noisy…
    press f…, then r to run a round". The next step follows the state: results, or another
    round. Before any round, the too-noisy advice is still the next step."""
    from session.api import Session

    monkeypatch.setattr(Session, "advised_threshold", lambda self, s, b: 0.045)
    ledger = sample(tmp_path / "l.db")  # round 1 completed, its baseline reproduced
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint = _hint(app)
    ledger.close()
    assert "too noisy" not in hint and "press f" not in hint, hint
    assert "round 1 is done" in hint and "results (6)" in hint, hint
    assert "another round (r)" in hint, hint

    before = sample(tmp_path / "b.db", m.StepName.ROUND)  # variants, no round yet
    app = PaneApp(RoundPane, before)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint = _hint(app)
    before.close()
    assert "too noisy" in hint and "press f" in hint and "0.045" in hint, hint


@pytest.mark.asyncio
async def test_the_variant_table_fits_the_pane(tmp_path: Path) -> None:
    """Issue 22 (screens 2): at 120x40 the demo's variant table ran past the pane, its last
    column cut to "f". With a long name, hypothesis and source (a patch's path) every
    column still shows, "files" included, within the pane's width."""
    from textual.widgets import DataTable

    ledger = sample(tmp_path / "l.db", m.StepName.ROUND)
    for v in ledger.list(m.Variant):
        v.source = "patch /home/you/gpuopt-demo/patches/" + v.name + "-a-rather-long-name.diff"
        v.name = v.name + "-with-a-long-suffix"
        ledger.put(v)
    app = PaneApp(RoundPane, ledger)
    async with app.run_test(size=(67, 30)) as pilot:  # the content pane's width at 120x40
        await built(pilot, app.pane)
        t = app.pane.query_one("#variant-table", DataTable)
        await pilot.pause()
        used = sum(c.get_render_width(t) for c in t.columns.values())
        room = t.scrollable_content_region.width
        header = [str(c.label) for c in t.columns.values()]
    ledger.close()
    assert header[-1] == "files"
    assert used <= room, (used, room)
