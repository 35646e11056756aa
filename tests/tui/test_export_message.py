"""Issue 22 items 7 / build 3: x on the Record step writes the record in a thread (it
gathers the whole session), which hands the written path, or the error, back to the pane
as a message: shown at once, with the "Writing…" line until then. The pane polled the
app for the path, and the export held the app while it wrote."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sample_session import SID
from tui_helpers import sample_ledger, settle, steady_app, step_keys, until

from session import api
from tui.screens.modals import ErrorModal


def _line(app: Any) -> str:
    return str(app.screen.query_one("#record-export").render())


@pytest.mark.asyncio
@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
async def test_the_export_runs_off_the_apps_thread_and_its_path_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran_in: list[threading.Thread] = []
    export = api.Session.export

    def spied(self: Any, *a: Any) -> Any:  # the real export, and the thread it ran in
        ran_in.append(threading.current_thread())
        return export(self, *a)

    monkeypatch.setattr(api.Session, "export", spied)
    out = tmp_path / "out"
    app = steady_app(sample_ledger(tmp_path / "l.db"), session_id=SID, export_dir=out)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await step_keys(pilot, "8")
        await settle(pilot)
        await step_keys(pilot, "x")
        await until(pilot, lambda: "Record written" in _line(app))
        assert f"gpuopt-{SID}.md" in _line(app) and ".json beside it" in _line(app)
    assert ran_in and ran_in[0] is not threading.main_thread()
    assert (out / f"gpuopt-{SID}.md").is_file()
    assert app.exported == str(out / f"gpuopt-{SID}.md")


@pytest.mark.asyncio
@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
async def test_an_export_that_fails_says_why_in_the_pane(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    app = steady_app(sample_ledger(tmp_path / "l.db"), session_id=SID, export_dir=blocker / "out")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await step_keys(pilot, "8")
        await settle(pilot)
        await step_keys(pilot, "x")
        await until(pilot, lambda: isinstance(app.screen, ErrorModal))
        assert isinstance(app.screen, ErrorModal)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ErrorModal))
        line = _line(app)
        assert line.startswith("The record was not written: ") and "a-file" in line, line
    assert app.exported is None
