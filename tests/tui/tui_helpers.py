"""Shared helpers of the TUI tests: a sample ledger and an app that draws the same every time."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sample_session import SID, build_sample
from scenes import demo_samples

from ledger import Ledger
from session import models as m
from tui.app import GpuoptApp


def sample_ledger(path: Path, upto: m.StepName = m.StepName.RECORD) -> Path:
    """A ledger file holding the sample session up to `upto`: a copy of one built once
    per process (creating a ledger and its rows was a tenth of a short app test)."""
    built = _built.get(upto)
    if built is None or not built.exists():
        built = Path(tempfile.mkdtemp(prefix="gpuopt-sample-")) / f"{upto.value}.db"
        atexit.register(shutil.rmtree, built.parent, True)
        with Ledger.open(built) as ledger:
            build_sample(ledger, upto)
        # closed: the last connection folded its write-ahead log into the file
        assert not Path(f"{built}-wal").exists(), "the sample ledger was left with a WAL"
        _built[upto] = built
    shutil.copyfile(built, path)
    return path


_built: dict[m.StepName, Path] = {}


def steady_app(path: Path, **kw: Any) -> GpuoptApp:
    """The app on a ledger with replayed telemetry (no cursor blink: conftest.py)."""
    kw.setdefault("telemetry", "replay")
    kw.setdefault("replay", demo_samples())
    return GpuoptApp(path, **kw)


async def settle(pilot: Any, rounds: int = 3) -> None:
    """A few frames, then until no step pane is still mounting its body (it does so once
    it is first shown): an event, not a count of frames sized for a quiet machine."""
    from tui.screens.step_base import StepPane

    for _ in range(rounds):
        await pilot.pause()
    for _ in range(6000):  # bounds a failure only (60 s)
        if not any(p._building for p in pilot.app.screen.query(StepPane)):
            break
        await pilot.pause(0.01)


__all__ = ["SID", "sample_ledger", "sample_session_screen", "settle", "steady_app"]


@asynccontextmanager
async def sample_session_screen(
    tmp_path: Path, size: tuple[int, int] = (160, 50)
) -> AsyncIterator[tuple[Any, Any, Any]]:
    """The sample session open in the app, settled: (app, pilot, its SessionScreen)."""
    from tui.screens.session import SessionScreen

    app = steady_app(sample_ledger(tmp_path / "l.db"), session_id=SID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.view is not None
        yield app, pilot, screen


async def step_keys(pilot: Any, *keys: str) -> None:
    """Press keys meant for the session screen: out of a text field first (as one Escape
    does), so a digit goes to the rail and not into the field. A second Escape would
    leave the session for the list, so it is not pressed here."""
    from textual.widgets import Input, Select, TextArea

    app = pilot.app
    if isinstance(app.focused, Input | TextArea | Select) and hasattr(app.screen, "pane"):
        app.screen.pane().focus()
        await pilot.pause()
    await pilot.press(*keys)


async def until(pilot: Any, ok: Any) -> None:
    """Wait until `ok()` holds: the state is the event; the bound only ends a failure."""
    for _ in range(6000):
        if ok():
            return
        await pilot.pause(0.01)
