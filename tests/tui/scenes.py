"""The pictures of the app: each scene is a ledger state, an app and the keys that reach it.

Used by the snapshot tests (tests/tui/test_snapshots.py); scripts/screenshots.py does not
use them (it pictures a real demo ledger). Every scene is repeatable: a sample ledger with
frozen ids and times, replayed telemetry, no cursor blink.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sample_session import SID, build_sample

from session import models as m


@dataclass
class Scene:
    name: str
    upto: m.StepName = m.StepName.RECORD
    app: dict[str, Any] = field(default_factory=dict)  # GpuoptApp keyword arguments
    keys: tuple[str, ...] = ()
    after: Callable[[Any], Awaitable[None]] | None = None


async def _round_running(pilot: Any) -> None:
    """A round in progress: progress and live estimates, as the engine reports them."""
    from dataclasses import dataclass as dc

    from tui.screens.session import EngineProgress

    @dc
    class P:
        phase: str
        message: str
        block: int
        max_blocks: int
        runs_done: int
        runs_total: int
        eta_s: float | None
        comparisons: list[m.Comparison]

    screen = pilot.app.screen
    screen.busy = "round"
    screen.update_title()
    screen.pane().show(screen.view)
    live = [
        m.Comparison(
            round_id="-",
            variant_id="v1fused00001",
            workload="softmax",
            n=9,
            ratio=0.745,
            ci_low=0.722,
            ci_high=0.771,
            verdict=m.Verdict.FASTER,
        ),
        m.Comparison(
            round_id="-",
            variant_id="v2nomax00001",
            workload="softmax",
            n=9,
            ratio=0.917,
            ci_low=0.881,
            ci_high=0.952,
            verdict=m.Verdict.FASTER,
        ),
        m.Comparison(
            round_id="-",
            variant_id="v3noop000001",
            workload="softmax",
            n=9,
            ratio=1.006,
            ci_low=0.978,
            ci_high=1.031,
            verdict=m.Verdict.INCONCLUSIVE,
            blocks_needed=6,
        ),
    ]
    screen.post_message(
        EngineProgress(
            "round",
            P("round", "block 9: fused, baseline, same, no-max", 9, 30, 36, 120, 42.0, live),
        )
    )
    await pilot.pause()
    await pilot.pause()


async def _error(pilot: Any) -> None:
    pilot.app.screen.show_error(
        "The round did not complete", "variant no-max: git worktree add failed: disk full"
    )
    await pilot.pause()


SCENES: list[Scene] = [
    Scene("01-contract", m.StepName.CONTRACT, keys=("1",)),
    Scene("02-baseline", m.StepName.BASELINE, keys=("2",)),
    Scene("03-preflight", m.StepName.PREFLIGHT, keys=("3",)),
    Scene("04-hypotheses", m.StepName.HYPOTHESES, keys=("4",)),
    Scene("05-round", m.StepName.ROUND, keys=("5",)),
    Scene("05b-round-running", m.StepName.ROUND, keys=("5",), after=_round_running),
    Scene("06-results", m.StepName.DISPOSITION, keys=("6",)),
    Scene("07-disposition", m.StepName.RECORD, keys=("7",)),
    Scene("08-record", m.StepName.RECORD, keys=("8",)),
    Scene("09-new-session", m.StepName.CONTRACT, app={"session_id": None, "draft": {"title": ""}}),
    Scene("10-picker", m.StepName.RECORD, app={"session_id": None}),
    Scene(
        "11-review", m.StepName.RECORD, app={"session_id": None, "review": True, "telemetry": "off"}
    ),
    Scene("12-error", m.StepName.ROUND, keys=("5",), after=_error),
    Scene("13-decide-form", m.StepName.DISPOSITION, keys=("7", "down", "d")),
    Scene("14-help", m.StepName.DISPOSITION, keys=("6", "question_mark")),
    Scene("15-add-variant", m.StepName.ROUND, keys=("5", "a")),
]


# Where the pictures' ledger lies, under a home directory of their own (the caller points
# HOME there): the title bar then reads the same path on every machine.
LEDGER_UNDER_HOME = Path(".local/share/gpuopt/ledger.db")


def steady_widgets() -> list[tuple[object, str, object]]:
    """(object, attribute, value) that make every picture the same: no cursor blink in
    any input or text area. The tests set them with monkeypatch, the script for good."""
    from textual.widgets import Input, TextArea

    return [(cls.__dict__["cursor_blink"], "_default", False) for cls in (Input, TextArea)]


def make_app(scene: Scene, home: Path) -> Any:
    """Fill a fresh ledger (under `home`, which HOME must name) for the scene and return
    the app to photograph."""
    from session.ledger_access import Ledger
    from tui.app import GpuoptApp

    ledger_path = home / LEDGER_UNDER_HOME
    ledger_path.parent.mkdir(parents=True, exist_ok=True)
    if not ledger_path.exists():
        with Ledger.open(ledger_path) as ledger:
            build_sample(ledger, scene.upto)
    kw: dict[str, Any] = {
        "session_id": SID,
        "telemetry": "replay",
        "replay": demo_samples(),
        "export_dir": ledger_path.parent,
    }
    kw.update(scene.app)
    return GpuoptApp(ledger_path, **kw)


async def drive(scene: Scene, pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause()
    for key in scene.keys:
        await pilot.press(key)
        await pilot.pause()
    await pilot.pause()
    if scene.after is not None:
        # the step settled first: a modal pushed while the pane beneath still owed its
        # scroll to the focused field left it unscrolled on a loaded machine (12-error at
        # 80x24 showed the round's form where the variants table is)
        await pilot.app.workers.wait_for_complete()
        await _body_built(pilot)
        await _settled(pilot)
        await scene.after(pilot)
    await pilot.app.workers.wait_for_complete()
    await _body_built(pilot)
    await _settled(pilot)


async def _settled(pilot: Any, timeout_s: float = 20.0) -> None:
    """Wait until the screen stops changing: some widgets lay out on idle (a table's rows
    after add_row), which a loaded machine reaches late; a picture taken before shows
    fields without their rows (CI saw it). Three equal frames in a row, each after the
    message queue drained, is the event waited on, not a time."""
    import time

    deadline = time.monotonic() + timeout_s
    last, same = None, 0
    while same < 2 and time.monotonic() < deadline:
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        frame = _frame(pilot.app)
        same = same + 1 if frame == last and not _pending(pilot.app) else 0
        last = frame
        await pilot.pause(0.02)


def _frame(app: Any) -> tuple[tuple[Any, ...], ...]:
    """The screen as the picture draws it (what export_screenshot prints, the screens
    behind a dialog included), as its cells' text and styles: the SVG a frame was
    compared as cost four times as much to make."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return tuple(tuple(segment for strip in line for segment in strip) for line in update.strips)


def _pending(app: Any) -> bool:
    """The screen in front still owes a layout or a repaint (its update timer fires after
    idle, late on a loaded machine), or a table its rows' dimensions: equal frames taken
    meanwhile are the old picture (CI at rest saw 05-round without its variant table)."""
    from textual.widgets import DataTable

    screen = app.screen
    owed = (
        screen._layout_required
        or screen._scroll_required
        or screen._repaint_required
        or screen._recompose_required
        or bool(screen._dirty_widgets)
    )
    if owed:
        return True
    # A widget's own request reaches the screen only when that widget next goes idle: until
    # then the screen owes nothing and equal frames show the old layout (four workers on 2
    # cores saw 05b-round-running's live table cut after its third row, its legend missing).
    if any(
        w._layout_required or w._repaint_required or w._scroll_required
        for w in screen.walk_children(with_self=False)
    ):
        return True
    # and the tables of the screens beneath: a modal's picture holds them (a loaded run saw
    # 12-error at 80x24 with the round's table not laid out). Only their tables: a screen
    # beneath keeps repaint flags it is not asked to clear, which would never settle.
    # A shown table whose rows are counted but not yet given their height owes its layout
    # too, with no flag set anywhere (two hogs beside the suite saw 04-hypotheses at 80x24
    # with its three rows in a table 0 lines high: the form drawn where the table goes).
    # Asked without a width too: a table not laid out at all owes the same. Tables in
    # hidden panes stay zero-sized for good: they owe nothing. (Six and eight workers on
    # 2 cores still pictured 04-hypotheses so; see the README's Development section.)
    return any(
        t._require_update_dimensions or (t.row_count and not t.size.height and _shown(t))
        for s in app.screen_stack
        for t in s.query(DataTable)
    )


def _shown(widget: Any) -> bool:
    """Neither the widget nor any container above it is hidden (display: none)."""
    return all(getattr(node, "display", True) for node in widget.ancestors_with_self)


async def _body_built(pilot: Any, timeout_s: float = 10.0) -> None:
    """Wait until the step in front has its body: it is built on a timer after the first
    frame, and a picture taken before would show the step without its fields."""
    import time

    # the session screen, also beneath a modal (an error, a form) pushed over it
    panes = [getattr(s, "pane", None) for s in reversed(pilot.app.screen_stack)]
    pane_of = next((p for p in panes if p is not None), None)
    if pane_of is None:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if pane_of().built_body:
                return
        except Exception:  # not mounted yet
            pass
        await pilot.pause(0.02)


def demo_samples(n: int = 48, t0_us: int = 1_780_000_000_000_000) -> list[m.TelemetrySample]:
    """A fixed, plausible GPU trace (for pictures and tests): busy, one power-cap moment."""
    out = []
    for i in range(n):
        busy = i >= 6
        util = 97.0 + (i % 3) if busy else 2.0
        out.append(
            m.TelemetrySample(
                t_us=t0_us + i * 250_000,
                source="replay",
                gpu=0,
                util_gpu=util,
                sm_clock_mhz=1980.0 - (45.0 if i in (30, 31) else 0) if busy else 345.0,
                mem_clock_mhz=3201.0,
                clock_reasons=(0x4 if i in (30, 31) else 0) if busy else 0x1,
                power_w=(560.0 + (i % 5) * 12) if busy else 92.0,
                power_limit_w=700.0,
                temperature_c=(44.0 + min(i, 30) * 0.25) if busy else 38.0,
                mem_used_bytes=(12 if busy else 1) * 2**30,
                cpu_percent=(18.0 + (i % 4) * 3) if busy else 3.0,
                rss_bytes=int(21.5 * 2**30),
            )
        )
    return out
