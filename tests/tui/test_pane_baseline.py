"""The baseline pane alone: r asks for a baseline with the runs typed; too few runs is
refused in the field; s asks to stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import PaneApp, built, sample

from session import models as m
from tui.screens.pane_messages import StartBaseline, StopWork
from tui.screens.step_base import StepPane
from tui.screens.steps.baseline import BaselinePane
from tui.widgets.form import Field


@pytest.mark.asyncio
async def test_baseline_pane_asks_for_a_baseline_and_a_stop(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.CONTRACT)
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        runs = app.pane.query_one("#field-runs", Field)
        runs.value = "3"
        await pilot.press("r")
        await pilot.pause()
        assert app.holder.got == []  # too few runs to judge its halves: refused here
        runs.value = "12"
        await pilot.press("r", "s")
        await pilot.pause()
        got = app.holder.got
        assert [type(x) for x in got] == [StartBaseline, StopWork]
        assert isinstance(got[0], StartBaseline) and got[0].runs == 12
    ledger.close()


@pytest.mark.asyncio
async def test_baseline_progress_shows_one_counter_and_an_eta(tmp_path: Path) -> None:
    """The engine's own words count the runs ("run 5 of 24", warm-up apart): no second
    counter that disagrees with it ("runs 6/25"), and the engine's ETA (from its pace)."""
    from textual.widgets import Static

    from session.conduct import Progress

    ledger = sample(tmp_path / "l.db", m.StepName.CONTRACT)
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        pane = app.pane
        assert isinstance(pane, BaselinePane)
        pane.progress(Progress("baseline", "softmax: warm-up", runs_done=1, runs_total=25))
        pane.progress(Progress("baseline", "softmax: run 5 of 24", runs_done=6, runs_total=25,
                               eta_s=42.0))  # fmt: skip
        await pilot.pause()
        shown = str(app.pane.query_one("#baseline-status", Static).content)
        assert "run 5 of 24" in shown and "6/25" not in shown
        eta = shown.split("ETA ", 1)[1].split(" ", 1)[0]
        assert eta == "42s", shown  # the engine's, in session.format's one ETA format
    ledger.close()


def _noisy_baseline(
    ledger: object, outcome: m.Reproducibility, detail: str, judged: m.Outcome | None = None
) -> None:
    """A later baseline of the sample session, with runs 8% apart from one another."""
    import random
    from datetime import timedelta

    from sample_session import SID

    first = ledger.latest_baseline(SID)  # type: ignore[attr-defined]
    b = first.model_copy(
        update={
            "id": "ba5e00000002",
            "reproducibility": outcome,
            "reproducibility_detail": detail,
            "outcome": judged,  # None: the least outcome its reproducibility means
            "threshold": 0.02,
            "created_at": first.created_at + timedelta(minutes=1),
        }
    )
    rng = random.Random(3)
    runs = [
        m.Run(
            id=f"nru{i:09d}",
            session_id=SID,
            baseline_id=b.id,
            arm="baseline",
            workload="softmax",
            block=i,
            value=4.1 * rng.gauss(1.0, 0.08),
            trust=m.Trust.CLEAN,
            started_us=100 + i,
            ended_us=101 + i,
        )
        for i in range(30)
    ]
    ledger.put(b, *runs)  # type: ignore[attr-defined]


def _shown(pane: StepPane) -> tuple[str, str]:
    from textual.widgets import Static

    hint = str(pane.query_one(".next", Static).content)
    info = pane.query_one("#baseline-info", Static).content
    return hint, info if isinstance(info, str) else _plain(info)


def _plain(renderable: object) -> str:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


@pytest.mark.asyncio
async def test_the_a_a_value_says_the_outcome_at_its_band(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        _, info = _shown(app.pane)
        assert "reproducible at ±2%" in info, info
    ledger.close()


@pytest.mark.asyncio
async def test_a_too_noisy_baseline_says_a_round_may_go_on_at_its_band(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    _noisy_baseline(ledger, m.Reproducibility.TOO_NOISY, "too noisy for ±2%; softmax: too noisy")
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint, info = _shown(app.pane)
        assert "too noisy for ±2%" in info
        assert "a round may go on at ±" in hint, hint
        # issue 22: the app's own way to that band, one key on the Round step; a new user's
        # walk of the demo: in the app, app keys only (the command is the CLI's words), and
        # what each key does: f only fills the band in, r runs the round
        assert "gpuopt round" not in hint and "--threshold" not in hint, hint
        assert "Round step (5)" in hint, hint
        assert "f fills in that band, then r runs the round" in hint, hint
        assert "press g to record it with more runs" not in hint  # g is the Round step's
        assert "or r here to record it with more runs" in hint, hint
    ledger.close()


@pytest.mark.asyncio
async def test_a_drift_with_a_named_cause_says_what_to_repair(tmp_path: Path) -> None:
    from session import conduct

    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    caused = conduct.Outcome.DRIFT_CAUSED.value
    _noisy_baseline(
        ledger,
        m.Reproducibility.NOT_REPRODUCIBLE,
        f"{caused} at ±2%; softmax: drifting",
        m.Outcome.DRIFT_CAUSED,
    )
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint, info = _shown(app.pane)
        assert f"not reproducible: {caused} at ±2%" in info
        assert conduct.repair_words(conduct.Outcome.DRIFT_CAUSED) in hint, hint
    ledger.close()


@pytest.mark.asyncio
async def test_a_drifting_baseline_with_no_named_cause_lets_a_round_go_on(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    _noisy_baseline(
        ledger, m.Reproducibility.NOT_REPRODUCIBLE, "drifting at ±2%; softmax: drifting"
    )
    app = PaneApp(BaselinePane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        hint, info = _shown(app.pane)
        assert "drifting at ±2% (a warning" in info and "not reproducible" not in info
        assert "a round goes on, paired" in hint and "absolute figures are unreliable" in hint
    ledger.close()


def test_the_aa_line_says_a_too_noisy_outcome_once(tmp_path: Path) -> None:
    """Issue 22: "too noisy for ±2%" three times in a row (the outcome, the detail's head,
    each workload's part)."""
    from rich.console import Console

    from session.read_model import load_view
    from tui.screens.steps.baseline import baseline_table

    ledger = sample(tmp_path / "l.db", m.StepName.BASELINE)
    view = load_view(ledger, ledger.list(m.Session)[0].id)
    b = view.baseline
    assert b is not None
    b.reproducibility = m.Reproducibility.TOO_NOISY
    b.threshold = 0.02
    b.reproducibility_detail = (
        "too noisy for ±2%; softmax: too noisy for ±2% after 12 runs (second half / first "
        "0.981); run-to-run noise CV 6.2%"
    )
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(baseline_table(view))
    text = console.export_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("A/A check")]
    assert line.count("too noisy for ±2%") == 1, line
    assert "softmax: after 12 runs" in line, line
    ledger.close()
