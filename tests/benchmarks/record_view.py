"""The Record step's cost: widgets and CPU to draw the sample session's record.

    .venv/bin/python -m tests.benchmarks.record_view [--repeats 5] [--textual]

Draws the test suite's sample record (tests/tui/sample_session.py) in the Record step at
120x40 and 80x24, headless, and prints for each size the widgets of the step and the CPU
its body took from mounting to the record drawn (median of the repeats). `--textual` draws
it with Textual's own markdown view instead (a widget per table cell, four per list item),
the view the step used before. Not a pytest module.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tui"))


async def draw(size: tuple[int, int], ledger: Any) -> tuple[int, float]:
    from pane_harness import PaneApp
    from textual.widgets import Markdown

    from tui.screens.steps.record import RecordPane

    app = PaneApp(RecordPane, ledger)
    async with app.run_test(size=size) as pilot:
        start = time.process_time()
        pane = app.pane
        while not pane.built_body:
            await pilot.pause(0.005)
        viewer = pane.query_one("#record-md", Markdown)
        while not (viewer.source and viewer.children):
            await pilot.pause(0.005)
        await pilot.pause()
        cpu = time.process_time() - start
        return len(list(pane.walk_children())), cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--textual", action="store_true", help="Textual's own markdown view")
    args = ap.parse_args()
    from pane_harness import sample

    if args.textual:  # the view before: Textual's markdown, its tables and lists
        from textual.widgets import Markdown

        import tui.widgets.record_markdown as rm

        rm.RecordMarkdown.BLOCKS = dict(Markdown.BLOCKS)
    print(f"the Record step, {'Textual' if args.textual else 'gpuopt'}'s markdown view")
    with tempfile.TemporaryDirectory() as tmp:
        ledger = sample(Path(tmp) / "l.db")
        for size in ((120, 40), (80, 24)):
            runs = [asyncio.run(draw(size, ledger)) for _ in range(args.repeats)]
            widgets = runs[-1][0]
            cpu = statistics.median(c for _, c in runs)
            print(f"  {size[0]}x{size[1]}: {widgets} widgets, {cpu:.2f} s of CPU to draw")
        ledger.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
