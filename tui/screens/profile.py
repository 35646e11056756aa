"""The profile screen: the operator (or kernel) table, the intermediate-tensor table and a
roofline chart, for a baseline's and its variants' stored profiles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from session.api import OP_HEAD, TENSOR_HEAD, fact_lines, op_rows, roofline_lines, tensor_rows
from tui.display import plain
from tui.widgets.footer import SteadyFooter
from tui.widgets.roofline import RooflineChart


class ProfileScreen(Screen[None]):
    """`profiles` are (label, stored profile summary) pairs, the baseline's first; the tables
    show the one picked with [ and ] (the first at start), the chart shows them all."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("left_square_bracket", "pick(-1)", "previous"),
        Binding("right_square_bracket", "pick(1)", "next"),
    ]
    DEFAULT_CSS = """
    ProfileScreen #profile-facts { height: auto; padding: 0 1; }
    ProfileScreen DataTable { height: auto; max-height: 12; }
    ProfileScreen #profile-tables { width: 3fr; }
    ProfileScreen #profile-chart { width: 2fr; }
    """

    def __init__(self, profiles: Sequence[tuple[str, Mapping[str, Any]]], **kw: Any):
        super().__init__(**kw)
        self.profiles = list(profiles)
        self.current = 0

    def compose(self) -> ComposeResult:
        yield Static(id="profile-facts")
        with Horizontal():
            with VerticalScroll(id="profile-tables"):
                yield DataTable(id="profile-ops", zebra_stripes=True, cursor_type="row")
                yield DataTable(id="profile-tensors", zebra_stripes=True, cursor_type="row")
            with Vertical(id="profile-chart"):
                yield RooflineChart(self.profiles, id="profile-roofline")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self.fill()

    def action_pick(self, step: int) -> None:
        if self.profiles:
            self.current = (self.current + step) % len(self.profiles)
            self.fill()

    def fill(self) -> None:
        facts = self.query_one("#profile-facts", Static)
        ops = self.query_one("#profile-ops", DataTable)
        tensors = self.query_one("#profile-tensors", DataTable)
        ops.clear(columns=True)
        tensors.clear(columns=True)
        if not self.profiles:
            facts.update("No profile yet: run `gpuopt profile SESSION` (or its step action).")
            return
        label, s = self.profiles[self.current]
        head = f"{label} · {s.get('workload', '')}"
        lines = [head, *fact_lines(s), *roofline_lines(s)[-3:]]
        facts.update(Text("\n".join(plain(line, 300) for line in lines)))
        ops.add_columns(*OP_HEAD)
        for row in op_rows(s, 12):
            ops.add_row(*(plain(c, 60) for c in row))
        tensors.add_columns(*TENSOR_HEAD)
        for row in tensor_rows(s, 12):
            tensors.add_row(*(plain(c, 60) for c in row))
