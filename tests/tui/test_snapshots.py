"""Snapshot tests: every scene of the app at 120x40 and 80x24 (pytest-textual-snapshot).

Update after an intended change with `pytest tests/tui/test_snapshots.py --snapshot-update`
and look at the SVGs in tests/tui/__snapshots__/ (scripts/screenshots.py pictures a real
demo ledger, not these scenes).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scenes import SCENES, drive, make_app

SIZES = [(120, 40), (80, 24)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("scene", SCENES, ids=lambda s: s.name)
@pytest.mark.slow
def test_scene(scene, size, snap_compare, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(tmp_path))  # the title bar shows ~/.local/share/gpuopt/…
    app = make_app(scene, tmp_path)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await drive(scene, pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
