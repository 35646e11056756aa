"""What every step pane has: its guidance, the action it expects next, and its body."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from session import models as m
from session.api import StepKeys
from session.read_model import STEP_ORDER, SessionView
from tui.display import cell, plain
from tui.keymap import key_of_id, spoken_key_of_id
from tui.screens.pane_messages import PaneContext
from tui.screens.session_keys import SESSION_BINDINGS


class _Body(Vertical):
    """The body of a step, composed from the pane's `body()` when first shown."""

    DEFAULT_CSS = "_Body { height: auto; }"

    def __init__(self, make: Callable[[], ComposeResult]) -> None:
        super().__init__(classes="step-body")
        self.make = make

    def compose(self) -> ComposeResult:
        yield from self.make()


class StepPane(VerticalScroll):
    """One step of the session, shown in the content switcher."""

    step: ClassVar[m.StepName]
    GUIDANCE: ClassVar[str] = ""

    can_focus = True
    WRITES: ClassVar[frozenset[str]] = frozenset(
        {
            "save",
            "record",
            "run",
            "add_variant",
            "confirm",
            "decide",
            "edit",
            "status",
            "write",
            "stop",
        }
    )

    def __init__(self, context: PaneContext | None = None) -> None:
        super().__init__(id=f"step-{self.step.value}", classes="step-pane")
        # shared with the screen that holds the pane, which keeps it up to date
        self.context = context or PaneContext()
        self.view: SessionView | None = None
        self.built_body = False
        self._building = False
        self._focus_pending = False
        self._drawn_width = -1  # the pane's width when its body was last drawn

    def watch_has_focus(self, _has_focus: bool) -> None:
        # The pane's focus restyles the pane alone (its :focus background). Textual's own
        # watcher matched the CSS of every widget below it again (214 on the Preflight
        # step), twice per step change. No rule styles a widget by a pane's focus
        # (tests/tui/test_pane_focus_styles.py holds that), so the body's lines, drawn
        # over the pane's background, need only be drawn again.
        self.app.stylesheet.update_nodes([self], animate=True)
        for widget in self.walk_children():
            widget.notify_style_update()
            widget.refresh()

    def compose(self) -> ComposeResult:
        # Only the words: the body is mounted the first time the step is shown, so the
        # first frame holds one step's widgets, not eight.
        yield Static(self.GUIDANCE, classes="guidance")
        yield Static("", classes="next")

    async def _build(self) -> None:
        if self.built_body:
            return
        await self.mount(_Body(self.body))
        self.built_body = True
        self._building = False
        self.built()
        self.show(self.view)
        if self._focus_pending:
            self._focus_pending = False
            self.focus_first()

    def built(self) -> None:
        """Called once the body is mounted (set up tables here)."""

    def body(self) -> ComposeResult:
        yield from ()

    @property
    def readonly(self) -> bool:
        return self.context.readonly

    def show(self, view: SessionView | None) -> None:
        """Redraw from a fresh view of the ledger."""
        self.view = view
        if not self.built_body:
            if not self._building:
                self._building = True
                self.call_later(self._build)
            return
        hint = self.next_hint(view)
        nxt = self.query_one(".next", Static)
        if self.readonly:
            nxt.update(Text("Read-only: this ledger is open for review.", style="dim"))
        else:
            # a hint may name a stored variant: its text is shown, never read
            nxt.update(Text.assemble(("Next: ", "bold"), plain(hint, 1000)) if hint else "")
        self._draw(view)
        self.refresh_bindings()

    def _draw(self, view: SessionView | None) -> None:
        self._drawn_width = self.size.width
        self.refresh_body(view)

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        """Hide the keys that would write while the ledger is read-only."""
        if self.readonly and action in self.WRITES:
            return False
        return self.action_open(action)

    def action_open(self, action: str) -> bool | None:
        return True

    def own_key(self, binding_id: str) -> str:
        """The key of one of this pane's bindings, as the person's keymap has it."""
        return self.key_in(type(self), binding_id)

    def key_in(self, pane: type[StepPane], binding_id: str) -> str:
        return key_of_id(self.app, list(pane.BINDINGS), binding_id)  # type: ignore[arg-type]

    def next_step_key(self) -> str:
        """The key that goes to the next step (the session screen's, as remapped)."""
        return key_of_id(self.app, list(SESSION_BINDINGS), "session.next_step")  # type: ignore[arg-type]

    def step_keys(self, **own: str) -> StepKeys:
        """The keys the Next line names, as remapped: the session screen's, and `own`
        (a StepKeys field -> the binding id of this pane's key for it)."""
        return StepKeys(
            next=self.next_step_key(),
            baseline_step=self.step_key(m.StepName.BASELINE),
            round_step=self.step_key(m.StepName.ROUND),
            **{
                field: spoken_key_of_id(self.app, list(type(self).BINDINGS), binding)  # type: ignore[arg-type]
                for field, binding in own.items()
            },
        )

    def step_key(self, step: m.StepName) -> str:
        """The key that jumps to a step (the session screen's, as remapped)."""
        n = STEP_ORDER.index(step) + 1
        return key_of_id(self.app, list(SESSION_BINDINGS), f"session.goto_{n}")  # type: ignore[arg-type]

    def text_width(self) -> int:
        """The columns a body drawn to fit has: the content's, less the vertical scroll
        bar whether it shows yet or not (filling the body is what brings it), so no line
        drawn for this width wraps once it does. `content_size` holds the bar's columns
        when it shows too (it is the region less padding and border only), so the bar is
        taken off in both cases: the width is the same before and after it comes."""
        return max(self.content_size.width - self.styles.scrollbar_size_vertical, 0)

    def on_resize(self) -> None:
        # Bodies are drawn to the width (nothing is sized by the height): a resize that
        # keeps it, such as the pane's first size arriving after the body was drawn to it,
        # draws nothing again. A redraw clears and refills the tables, zero lines high
        # until their rows are measured again.
        if (
            self.view is not None
            and self.display
            and self.built_body
            and self.size.width != self._drawn_width
        ):
            self._draw(self.view)

    def next_hint(self, view: SessionView | None) -> str:
        return ""

    def refresh_body(self, view: SessionView | None) -> None:
        pass

    def unsaved(self) -> bool:
        """Text typed here and not saved (asked about before it could be lost)."""
        return False

    def help_text(self) -> str | Text:
        """What `?` says of this step before the keys."""
        return self.GUIDANCE

    def request_focus(self) -> None:
        """Focus the step's first field once its body exists."""
        if self.built_body:
            self.focus_first()
        else:
            self._focus_pending = True
            self.focus()

    def focus_first(self) -> None:
        """Put the keyboard where the step expects it."""
        self.focus()

    def focus_from_top(self, widget: Widget) -> None:
        """Focus a field near the top of the body and show the step from its top, the Next
        line with it. Scrolled to at the focus itself, the pane scrolled by where a body
        still being laid out put the field: about one start in five the disposition's
        table came to the top and hid the Next line (the 07-disposition snapshot at 80x24)."""
        widget.focus(scroll_visible=False)
        self.scroll_home(animate=False)


def clip(text: str, width: int) -> Text:
    """Stored text cut to a table cell's width, shown literally."""
    return cell(text, width, brief=True)
