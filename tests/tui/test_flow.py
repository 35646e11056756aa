"""The whole session driven through the app with the real engine, on a tiny repository whose
workload prints a fixed number (so every verdict is certain and the test is fast)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tui_helpers import settle, steady_app, step_keys

from ledger import Ledger
from session import models as m
from tui.screens.modals import FormModal
from tui.screens.session import SessionScreen
from tui.widgets.form import Field

pytest.importorskip("session.conduct")

BENCH = 'import json\nprint(json.dumps({"gpuopt_value": float(open("value.txt").read())}))\n'
CHECK = 'import sys\nsys.exit(0 if open("ok.txt").read().strip() == "yes" else 1)\n'


def _repo(make_repo) -> Path:  # type: ignore[no-untyped-def]
    from conftest import run_git

    repo = make_repo(
        "work", {"bench.py": BENCH, "check.py": CHECK, "value.txt": "1.0\n", "ok.txt": "yes\n"}
    )
    for branch, value, ok in (
        ("fast", "0.8", "yes"),
        ("broken", "0.9", "no"),
        ("same", "1.0", "yes"),
    ):
        run_git(repo, "checkout", "-q", "-b", branch, "main")
        (repo / "value.txt").write_text(value + "\n")
        (repo / "ok.txt").write_text(ok + "\n")
        if branch == "same":
            (repo / "README").write_text("a comment only\n")
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", branch)
    run_git(repo, "checkout", "-q", "main")
    return repo


async def _wait(app, pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause(0.2)
    await app.workers.wait_for_complete()
    await settle(pilot, 5)


async def _modal(app, pilot, **values: str) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    modal = app.screen
    assert isinstance(modal, FormModal), type(modal)
    for name, value in values.items():
        modal.query_one(f"#field-{name}", Field).value = value
    await pilot.press("ctrl+s")
    await settle(pilot)
    if app.screen is modal:
        pytest.fail(f"the form stayed open: {modal.query_one('#form-error').content}")


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_whole_session_through_the_app(tmp_path: Path, make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = _repo(make_repo)
    db = tmp_path / "l.db"
    Ledger.open(db).close()
    py = sys.executable
    draft = {
        "title": "fixed numbers",
        "repo": str(repo),
        "workloads": f"bench={py} bench.py",
        "metric": "json:gpuopt_value",
        "unit": "ms",
        "check": f"{py} check.py",
    }
    app = steady_app(db, draft=draft, export_dir=tmp_path / "out", seed=3)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        await pilot.press("ctrl+s")  # contract → session
        await settle(pilot)
        assert screen.session_id is not None
        assert screen.current is m.StepName.BASELINE
        screen.pane().query_one("#field-runs", Field).value = "8"
        await step_keys(pilot, "r")
        await _wait(app, pilot)
        assert screen.view.baseline is not None, "baseline not recorded"
        assert screen.view.baseline.reproducibility is m.Reproducibility.REPRODUCIBLE

        await pilot.press("4", "w", *"values file is smaller", "ctrl+s")
        await settle(pilot)
        assert len(screen.view.hypotheses) == 1

        await step_keys(pilot, "5")
        await settle(pilot)
        for name in ("fast", "broken", "same"):
            await pilot.press("a")
            await _modal(app, pilot, name=name, ref=name)
        assert [v.name for v in screen.view.variants] == ["fast", "broken", "same"]
        pane = screen.pane()
        pane.query_one("#field-min_blocks", Field).value = "6"
        pane.query_one("#field-max_blocks", Field).value = "6"
        await step_keys(pilot, "r")
        await _wait(app, pilot)
        assert screen.current is m.StepName.RESULTS
        assert screen.view.last_round is not None

        await pilot.press("c")
        await _modal(app, pilot)
        await pilot.press("7")
        await settle(pilot)
        await pilot.press("d")
        await _modal(
            app,
            pilot,
            choice="keep-default",
            optimization_class="NA",
            fallback="revert",
            reason="fixed numbers",
            guards="value.txt holds a number",
        )
        await pilot.press("8", "x")
        await settle(pilot)

    with Ledger.open(db) as ledger:
        (session,) = ledger.list(m.Session)
        assert session.title == "fixed numbers"
        variants = {v.name: v for v in ledger.list(m.Variant, session_id=session.id)}
        (rnd,) = ledger.list(m.Round, session_id=session.id)
        assert rnd.status is m.RoundStatus.COMPLETED
        verdicts = {c.variant_id: c.verdict for c in ledger.list(m.Comparison, round_id=rnd.id)}
        assert verdicts[variants["fast"].id] is m.Verdict.FASTER
        assert verdicts[variants["same"].id] is m.Verdict.SAME
        checks = {
            c.variant_id: c.passed for c in ledger.list(m.CorrectnessResult, session_id=session.id)
        }
        assert checks[variants["broken"].id] is False and checks[variants["fast"].id] is True
        (residual,) = ledger.list(m.Residual, session_id=session.id)
        assert residual.confirmed is not None
        (d,) = ledger.list(m.Disposition, session_id=session.id)
        assert d.variant_id == variants["fast"].id and d.choice is m.DispositionChoice.KEEP_DEFAULT
    record = (tmp_path / "out" / f"gpuopt-{session.id}.md").read_text()
    from session.dispositions import DESCRIPTIONS  # the record says the choice in words

    assert "fixed numbers" in record
    assert DESCRIPTIONS[m.DispositionChoice.KEEP_DEFAULT] in record
