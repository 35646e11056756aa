"""Pilot tests of the app on a sample ledger: every step, the forms, the gates, review."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import ContentSwitcher, DataTable, Input, Static
from tui_helpers import SID, sample_ledger, settle, steady_app, step_keys

from ledger import Ledger
from session import conduct
from session import models as m
from tui.screens.modals import ErrorModal, FormModal
from tui.screens.review import ReviewScreen
from tui.screens.session import SessionScreen
from tui.widgets.form import Field

ROOT = Path(__file__).resolve().parents[2]


def _text(widget: Static) -> str:
    """The plain text a Static shows, whatever renderable it holds."""
    from rich.console import Console

    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(content)
    return console.export_text()


@pytest.mark.asyncio
@pytest.mark.slow
async def test_every_step_shows_its_own_content(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    expected = {
        "1": ("contract", "python bench.py"),
        "2": ("baseline", "b45e11e7c1e0"),
        "3": ("preflight", None),
        "4": ("hypotheses", None),
        "5": ("round", None),
        "6": ("results", "FASTER"),
        "7": ("disposition", None),
        "8": ("record", None),
    }
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        for key, (step, needle) in expected.items():
            await step_keys(pilot, key)
            await settle(pilot)
            assert app.screen.query_one(ContentSwitcher).current == f"step-{step}"
            if needle:
                texts = " ".join(_text(s) for s in app.screen.query(f"#step-{step} Static"))
                assert needle in texts, (step, needle)
        # the rail shows the method's states: the sample leaves one variant undecided
        states = {s.step: s.state for s in screen.view.steps}
        assert states[m.StepName.CONTRACT] is m.StepState.DONE
        assert states[m.StepName.DISPOSITION] is not m.StepState.DONE


@pytest.mark.asyncio
@pytest.mark.slow
async def test_contract_form_puts_each_error_under_its_field(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    Ledger.open(db).close()
    app = steady_app(db, draft={"title": "x"})
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.view is None
        pane = screen.pane()
        fields = {f.field_name: f for f in pane.query(Field)}
        fields["title"].value = ""
        fields["repo"].value = str(tmp_path / "missing")
        fields["metric"].value = "regex:([0-9]+)"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "at least one workload" in _text(pane.query_one("#workloads-error", Static))
        assert "value" in _text(fields["metric"].query_one(".error", Static))
        # fix metric and workloads: now the repository and the title are wrong
        fields["metric"].value = "wall"
        from textual.widgets import TextArea

        pane.query_one("#workloads-text", TextArea).text = "run=python -c pass"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "no such directory" in _text(fields["repo"].query_one(".error", Static))
        fields["repo"].value = str(tmp_path)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "empty" in _text(fields["title"].query_one(".error", Static))
        fields["title"].value = "a title"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.session_id is not None
    with Ledger.open(db) as ledger:
        saved = ledger.list(m.Session)
    assert [s.title for s in saved] == ["a title"]
    assert saved[0].contract.workloads[0].command == "python -c pass"


@pytest.mark.asyncio
@pytest.mark.slow
async def test_hypothesis_form_recalls_similar_rejected_ideas(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db", m.StepName.PREFLIGHT)
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4", "w")
        await settle(pilot)
        assert isinstance(app.focused, Input)
        await pilot.press(*"skip the max subtraction")
        await pilot.pause(0.5)
        await settle(pilot)
        similar = app.screen.query_one("#hyp-similar", Static)
        assert similar.display and "Skip the max subtraction" in _text(similar)
        await pilot.press("ctrl+s")
        await settle(pilot)
    with Ledger.open(db) as ledger:
        mine = ledger.list(m.Hypothesis, session_id=SID)
    assert [h.title for h in mine] == ["skip the max subtraction"]


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_refused_gate_says_what_is_missing(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db", m.StepName.DISPOSITION)
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        table = app.screen.query_one("#disp-table", DataTable)
        table.focus()
        await pilot.press("down")  # no-max: its check failed
        await settle(pilot)
        gates = _text(app.screen.query_one("#disp-gates", Static))
        assert "no-max" in gates and "missing" in gates
        await pilot.press("d")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, FormModal)
        modal.query_one("#field-choice", Field).value = "keep-default"
        modal.query_one("#field-optimization_class", Field).value = "C2"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is modal  # refused: the form stays open
        assert "Refused" in _text(modal.query_one("#form-error", Static))
        await pilot.press("escape")
        await settle(pilot)
    with Ledger.open(db) as ledger:
        assert ledger.list(m.Disposition, variant_id="v2nomax00001") == []


@pytest.mark.asyncio
@pytest.mark.slow
async def test_export_writes_the_record(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    out = tmp_path / "out"
    app = steady_app(db, session_id=SID, export_dir=out)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("8", "x")
        await settle(pilot)
        for _ in range(6000):  # the export's thread saying it wrote is the event
            if app.exported is not None:
                break
            await pilot.pause(0.01)
    md = out / f"gpuopt-{SID}.md"
    assert md.is_file() and "Decision record" in md.read_text()
    assert (out / f"gpuopt-{SID}.json").is_file()
    assert app.exported == str(md)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_review_sorts_filters_and_lists_rejected_ideas(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, review=True, telemetry="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert app.ledger.readonly
        table = app.screen.query_one("#review-sessions", DataTable)
        assert table.row_count == 2
        assert "Softmax: fewer passes" in _text(app.screen.query_one("#review-detail", Static))
        await pilot.press("o")  # created, oldest first
        await settle(pilot)
        assert str(table.get_row_at(0)[1]) == "Softmax in fp16"
        await pilot.press("slash", *"fp16", "enter")
        await settle(pilot)
        assert table.row_count == 1
        await pilot.press("h")
        await settle(pilot)
        rejected = app.screen.query_one("#review-rejected", DataTable)
        assert rejected.row_count == 1
        await pilot.press("s", "enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen) and app.screen.readonly


@pytest.mark.asyncio
@pytest.mark.slow
async def test_read_only_never_starts_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = sample_ledger(tmp_path / "l.db", m.StepName.CONTRACT)
    called = []
    monkeypatch.setattr(conduct, "record_baseline", lambda *a, **k: called.append(1))
    app = steady_app(db, session_id=SID, readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2", "r")
        await settle(pilot)
        assert app.screen.busy is None
    assert called == []


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_failing_worker_shows_a_modal_and_the_app_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sample_ledger(tmp_path / "l.db", m.StepName.CONTRACT)

    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(conduct, "record_baseline", boom)
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2", "r")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert isinstance(app.screen, ErrorModal)
        assert "the disk is on fire" in app.screen.message
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen) and app.screen.busy is None
    assert app.return_code in (0, None)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_narrow_terminal_keeps_every_part(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.has_class("-narrow")
        for sel in ("#rail-box", "#content", "#telemetry-box"):
            region = screen.query_one(sel).region
            assert region.width > 0 and region.height > 0 and region.right <= 80, sel


@pytest.mark.slow
def test_the_ui_process_never_imports_torch(tmp_path: Path) -> None:
    db = sample_ledger(tmp_path / "l.db")
    script = f"""
import asyncio, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from tui_helpers import steady_app, step_keys, SID
async def main():
    app = steady_app({str(db)!r}, session_id=SID, telemetry="live")
    async with app.run_test(size=(100, 30)) as pilot:
        for key in "12345678":
            await step_keys(pilot, key)
            await pilot.pause()
asyncio.run(main())
assert "torch" not in sys.modules, "torch was imported"
print("no torch")
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no torch" in done.stdout
