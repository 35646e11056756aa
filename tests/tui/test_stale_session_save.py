"""A save from the app never undoes an edit the command line made meanwhile.

The app reads a session; `gpuopt preflight --bottleneck` (another process) changes it;
ctrl+s on the contract must not write the app's stale copy back: the conflict is shown,
with what changed, and the person reloads or saves their own fields onto the stored one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import settle, steady_app

from ledger import Ledger
from session import models as m
from tui.screens.modals import ConflictModal
from tui.screens.session import SessionScreen
from tui.widgets.form import Field

ROOT = Path(__file__).resolve().parents[2]


def cli(db: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(db), *args],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _session(db: Path, repo: Path) -> m.Session:
    s = m.Session(
        title="before",
        repo=str(repo),
        contract=m.Contract(workloads=[m.Workload(name="w", command="true")]),
    )
    with Ledger.open(db) as ledger:
        ledger.put(s)
    return s


def _modal_text(modal: ConflictModal) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    for w in modal.query("Static"):
        console.print(w.content)  # type: ignore[attr-defined]
    return console.export_text()


async def _edit_title_and_save(app, pilot, title: str) -> None:  # type: ignore[no-untyped-def]
    screen = app.screen
    assert isinstance(screen, SessionScreen)
    screen.goto(m.StepName.CONTRACT)
    await settle(pilot)
    screen.pane().query_one("#field-title", Field).value = title
    screen.pane().action_save()  # what ctrl+s on the contract does
    await settle(pilot)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_reload_keeps_the_cli_edit(tmp_path: Path, make_repo) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "l.db"
    s = _session(db, make_repo())
    app = steady_app(db, session_id=s.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        cli(db, "preflight", s.id, "--bottleneck", "bandwidth-bound",
            "--bottleneck-evidence", "DRAM at 90%")  # fmt: skip
        await _edit_title_and_save(app, pilot, "after")
        modal = app.screen
        assert isinstance(modal, ConflictModal), "the stale save was not stopped"
        text = _modal_text(modal)
        assert "bottleneck" in text and "bandwidth-bound" in text, text
        await pilot.press("r")  # reload: the stored version comes back
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
        assert app.screen.view.session.bottleneck is m.BottleneckClass.BANDWIDTH_BOUND
        # saved again from the fresh copy: no conflict, both edits kept
        await _edit_title_and_save(app, pilot, "after")
        assert isinstance(app.screen, SessionScreen)
    with Ledger.open(db, readonly=True) as ledger:
        got = ledger.get(m.Session, s.id)
    assert got is not None
    assert got.bottleneck is m.BottleneckClass.BANDWIDTH_BOUND
    assert got.bottleneck_evidence == "DRAM at 90%"
    assert got.title == "after"


@pytest.mark.asyncio
async def test_save_mine_onto_the_stored_version(tmp_path: Path, make_repo) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "l.db"
    s = _session(db, make_repo())
    app = steady_app(db, session_id=s.id)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        cli(db, "preflight", s.id, "--bottleneck", "launch-bound", "--bottleneck-evidence", "many")
        await _edit_title_and_save(app, pilot, "mine")
        assert isinstance(app.screen, ConflictModal)
        await pilot.press("m")  # my fields (title, repository, contract) onto theirs
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
    with Ledger.open(db, readonly=True) as ledger:
        got = ledger.get(m.Session, s.id)
    assert got is not None
    assert got.bottleneck is m.BottleneckClass.LAUNCH_BOUND and got.title == "mine"


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_hypothesis_edit_keeps_a_field_the_cli_changed(tmp_path: Path) -> None:
    from tui_helpers import SID, sample_ledger

    db = sample_ledger(tmp_path / "l.db")
    with Ledger.open(db, readonly=True) as ledger:
        h = ledger.list(m.Hypothesis, session_id=SID)[0]
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        screen.goto(m.StepName.HYPOTHESES, focus=True)
        await settle(pilot)
        pane = screen.pane()
        pane.query_one("#hyp-table").move_cursor(row=0)  # type: ignore[attr-defined]
        pane.action_edit()
        await settle(pilot)
        cli(db, "hypothesis", "edit", SID, h.id, "--mechanism", "from the shell", "--why", "x")
        pane.query_one("#field-title", Field).value = "a new title"
        pane.action_save()
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)  # no overlap: nothing to ask
    with Ledger.open(db, readonly=True) as ledger:
        got = ledger.get(m.Hypothesis, h.id)
    assert got is not None and got.title == "a new title"
    assert got.mechanism == "from the shell"


@pytest.mark.asyncio
@pytest.mark.slow
async def test_saving_the_preflight_keeps_an_answer_given_elsewhere(tmp_path: Path) -> None:
    from tui_helpers import SID, sample_ledger

    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        screen.goto(m.StepName.PREFLIGHT, focus=True)
        await settle(pilot)
        cli(db, "preflight", SID, "--measured", "lifetime=from the shell")
        pane = screen.pane()
        pane.query_one("#field-backing-text", Field).value = "pinned host memory"
        pane.action_save()
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen)
    with Ledger.open(db, readonly=True) as ledger:
        got = {a.question.value: a.text for a in ledger.list(m.PreflightAnswer, session_id=SID)}
    assert got["lifetime"] == "from the shell"
    assert got["backing"] == "pinned host memory"
