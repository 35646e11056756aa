"""The app recording a baseline (its engine job, its telemetry sink and its own view: three
openings of the ledger in one process) while other gpuopt processes come and go writing
the same ledger: the ledger stays whole and the baseline is recorded."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tui_helpers import settle, steady_app, step_keys

from ledger import Ledger
from session import models as m
from tui.screens.session import SessionScreen
from tui.widgets.form import Field

ROOT = Path(__file__).resolve().parents[2]
WRITER = ROOT / "tests" / "ledger" / "ledger_writer.py"
BENCH = 'import json\nprint(json.dumps({"gpuopt_value": float(open("value.txt").read())}))\n'


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_app_records_a_baseline_while_the_cli_writes(tmp_path: Path, make_repo) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo("work", {"bench.py": BENCH, "value.txt": "1.0\n"})
    db = tmp_path / "l.db"
    Ledger.open(db).close()
    draft = {
        "title": "beside writers",
        "repo": str(repo),
        "workloads": f"bench={sys.executable} bench.py",
        "metric": "json:gpuopt_value",
        "unit": "ms",
    }
    stop = threading.Event()
    written: list[int] = []

    def writers() -> None:
        i = 0
        while not stop.is_set():
            done = subprocess.run(
                [sys.executable, str(WRITER), str(db), f"cli-{i}", "2", "0", "2", "50"],
                capture_output=True, text=True, timeout=120,
                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            )  # fmt: skip
            written.append(done.returncode)
            i += 1

    app = steady_app(db, draft=draft, export_dir=tmp_path / "out", seed=3)
    thread = threading.Thread(target=writers)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        await pilot.press("ctrl+s")
        await settle(pilot)
        screen.pane().query_one("#field-runs", Field).value = "16"
        thread.start()
        try:
            await step_keys(pilot, "r")
            await pilot.pause(0.2)
            await app.workers.wait_for_complete()
            await settle(pilot, 5)
        finally:
            stop.set()
            thread.join()
        assert screen.view.baseline is not None, "baseline not recorded"
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    raw.close()
    assert written and set(written) == {0}
    with Ledger.open(db) as ledger:
        assert ledger.check() == []
        assert len(ledger.list(m.Session)) == 1 + 2 * len(written)
        assert len(ledger.list(m.Baseline)) == 1
