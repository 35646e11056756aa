"""The record pane alone: it shows the session's decision record, laid out for its width,
and asks for its export, saying at once that it is writing and then where it wrote."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pane_harness import Holder, PaneApp, built, sample
from textual.widgets import Markdown

from session.md import table_width
from tui.screens.pane_messages import ExportRecord
from tui.screens.steps.record import RecordPane


def screen_lines(app: Any) -> list[str]:
    """What the terminal shows, line by line (the compositor's strips as text)."""
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


def tables(md: str) -> list[list[list[str]]]:
    """The markdown's tables, each as rows of cells (the delimiter row left out)."""
    found: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            if not re.fullmatch(r"\|( --- \|)+", line):
                rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif rows:
            found.append(rows)
            rows = []
    return found


async def settled(pilot: Any, pane: RecordPane) -> Markdown:
    """The pane's body drawn from the view, and its markdown rendered."""
    await built(pilot, pane)
    viewer = pane.query_one("#record-md", Markdown)
    for _ in range(6000):  # bounds a failure only: the rendered blocks are the event
        if viewer.source and viewer.children:
            break
        await pilot.pause(0.01)
    await pilot.pause()
    return viewer


@pytest.mark.asyncio
@pytest.mark.slow
async def test_record_pane_shows_the_record_and_asks_for_its_export(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        pane = app.pane
        assert isinstance(pane, RecordPane)
        assert "5e551011a7c1" in pane.record_markdown()
        assert app.pane.query_one("#record-md", Markdown).source
        await pilot.press("x")
        await pilot.pause()
        assert [type(msg) for msg in app.holder.got] == [ExportRecord]
    ledger.close()


@pytest.mark.asyncio
@pytest.mark.slow
async def test_record_pane_reads_the_records_model(tmp_path: Path) -> None:
    """The pane shows the record of the same model the export writes, laid out for its
    width: summary first, the narrow table in the app and the full one in the file."""
    from session.record import gather, to_markdown

    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=(120, 40)) as pilot:
        await built(pilot, app.pane)
        pane = app.pane
        assert isinstance(pane, RecordPane) and pane.view is not None
        view = pane.view
        shown = pane.record_markdown()
        record = gather(ledger, view.session)
        assert shown == to_markdown(record, fit=pane.record_width())
        assert shown.splitlines()[2].startswith("- **What:**")
        file_head = next(x for x in to_markdown(record).splitlines() if x.startswith("| "))
        assert "correctness" in file_head and "round" in file_head  # the file: whole
        app_head = next(x for x in shown.splitlines() if x.startswith("| "))
        assert "correctness" not in app_head and "decision" in app_head
    ledger.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.slow
async def test_every_table_the_record_step_shows_fits_its_width(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """Issue 22: the Record step squeezed a 9-column table into 65 columns, nearly every
    cell cut. Now each table it shows fits whole, the summary's first, and its cells are
    on screen uncut."""
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=size) as pilot:
        pane = app.pane
        assert isinstance(pane, RecordPane)
        await settled(pilot, pane)
        shown = pane.record_markdown()
        width = pane.record_width()
        assert width <= size[0]
        found = tables(shown)
        assert found, shown[:2000]
        for table in found:
            assert table_width(table) <= width, table
        summary = found[0]
        assert summary[0] == ["variant", "verdict", "ratio (95% CI)", "decision"]
        assert summary[1] == ["fused", "FASTER", "0.742 (0.731–0.755)", "keep"]
        # a wide details table is one line per row, nothing of it lost
        assert "- **round 1** · variant: fused · workload: softmax" in shown
        text = "\n".join(screen_lines(app))
        assert "…" not in text, text
        assert re.search(r"fused\s+│?\s*FASTER\s+│?\s*0\.742 \(0\.731–0\.755\)", text), text
    ledger.close()


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_record_step_scrolls_to_its_last_section(tmp_path: Path) -> None:
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.pane
        assert isinstance(pane, RecordPane)
        await settled(pilot, pane)
        assert pane.max_scroll_y > 0
        pane.focus()
        await pilot.press("end")
        for _ in range(6000):  # the scroll animation's end is the event
            if pane.scroll_y >= pane.max_scroll_y:
                break
            await pilot.pause(0.01)
        assert pane.scroll_y == pane.max_scroll_y > 0
    ledger.close()


@pytest.mark.asyncio
@pytest.mark.slow
async def test_export_says_at_once_it_is_writing_and_then_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: the file-path toast came 3-4 s after `x`, with no busy sign. The pane
    says "Writing…" before the export starts, and the path as soon as it is written."""
    ledger = sample(tmp_path / "l.db")
    app = PaneApp(RecordPane, ledger)
    app.export_dir = str(tmp_path / "out")  # type: ignore[attr-defined]
    app.exported = None  # type: ignore[attr-defined]
    seen: list[str] = []

    def on_export(_holder: Any, msg: ExportRecord) -> None:  # the session screen's part: it writes
        # what the terminal shows as the export starts: the busy line, already drawn
        seen.append("\n".join(screen_lines(app)))
        from session.record_files import export_record

        assert pane.view is not None
        pane.export_finished(str(export_record(ledger, pane.view.session, tmp_path / "out")))

    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.pane
        assert isinstance(pane, RecordPane)
        await settled(pilot, pane)
        monkeypatch.setattr(Holder, "on_export_record", on_export)
        await pilot.press("x")
        line = pane.query_one("#record-export")
        for _ in range(6000):  # the line naming the written file is the event
            if "Record written" in str(line.render()):
                break
            await pilot.pause(0.01)
        assert seen and "Writing the record to" in seen[0]  # busy before the export ran
        written = str(line.render())
        assert "gpuopt-5e551011a7c1.md" in written and ".json beside it" in written
        assert (tmp_path / "out" / "gpuopt-5e551011a7c1.md").exists()
        text = "\n".join(screen_lines(app))
        assert "gpuopt-5e551011a7c1.md" in text
    ledger.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
async def test_the_record_heading_sits_under_the_next_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """Issue 22 (screens 4): about four blank rows stood above the record's heading (the
    export line while empty, its margin and the heading's own). In the app, one blank row
    separates "Next:" from the heading; the export line takes none until it says something."""
    from scenes import SCENES, drive, make_app

    monkeypatch.setenv("HOME", str(tmp_path))
    scene = next(s for s in SCENES if s.name == "08-record")
    app = make_app(scene, tmp_path)
    async with app.run_test(size=size) as pilot:
        await drive(scene, pilot)
        lines = screen_lines(app)
    nxt = next(i for i, line in enumerate(lines) if "Next:" in line)
    head = next(i for i, line in enumerate(lines) if "Decision record" in line)
    assert head - nxt == 2, lines[nxt : head + 1]
