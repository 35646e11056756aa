"""Small modal dialogs: an error, a yes/no question, a few fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Label, Select, Static

from tui.display import LONG_LIMIT, plain, shown
from tui.widgets.form import Field, clear_errors, show_errors


class ErrorModal(ModalScreen[None]):
    """What went wrong, in a few lines; the app keeps running.

    A str title or message is shown literally (it often quotes stored text); pass a Text
    for styled words of the app's own.
    """

    BINDINGS = [Binding("escape,enter,q", "dismiss", "close", id="error.dismiss")]

    def __init__(self, title: str, message: str | Text, detail: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.message = message
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="error-dialog"):
            yield Label(shown(self.title_text), id="dialog-title")
            message = self.message
            if not isinstance(message, Text):
                message = shown(message, LONG_LIMIT, multiline=True)
            yield Static(message, id="dialog-message")
            if self.detail:
                with VerticalScroll(id="dialog-detail"):
                    yield Static(shown(self.detail, None, multiline=True))
            yield Static("[b]enter[/] / [b]esc[/] close", classes="dialog-keys")

    def action_dismiss(self, result: Any = None) -> Any:
        self.dismiss(None)


class HelpModal(ModalScreen[None]):
    """`?`: what the step is for, the keys active now (as remapped), and a glossary of
    what the screen shows; it scrolls, so nothing is cut."""

    BINDINGS = [Binding("escape,enter,q,question_mark", "dismiss", "close", id="help.dismiss")]

    def __init__(self, title: str, guidance: str | Text, keys: Text, glossary: Text) -> None:
        super().__init__()
        self.title_text = title
        self.parts = (guidance, keys, glossary)

    def compose(self) -> ComposeResult:
        guidance, keys, glossary = self.parts
        with Vertical(id="dialog", classes="help-dialog"):
            yield Label(shown(self.title_text), id="dialog-title")
            with VerticalScroll(id="help-body"):
                yield Static(guidance, id="help-guidance")
                yield Static(Text("Keys", style="bold"))
                yield Static(keys, id="help-keys")
                yield Static(glossary, id="help-glossary")
            yield Static("[b]esc[/] close · ↑↓ scroll", classes="dialog-keys")

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    def action_dismiss(self, result: Any = None) -> Any:
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "yes", id="confirm.answer_true"),
        Binding("n,escape", "answer(False)", "no", id="confirm.answer_false"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="dialog-message")
            yield Static("[b]y[/] yes   [b]n[/] no", classes="dialog-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class QuitModal(ModalScreen[bool]):
    """Asked on ctrl+q while a baseline or round runs: True stops it cleanly, then quits."""

    BINDINGS = [
        Binding("s,q,y", "answer(True)", "stop and quit", id="quit.answer_true"),
        Binding("k,n,escape", "answer(False)", "keep running", id="quit.answer_false"),
    ]

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(f"A {self.kind} is running", style="bold"), id="dialog-title")
            yield Static(
                Text(
                    "Quit now and the run in progress is lost with nothing said about it. "
                    "Stop after the current run instead: what was measured is kept and the "
                    f"{self.kind} is marked interrupted; then gpuopt quits."
                ),
                id="dialog-message",
            )
            yield Static(
                Text.assemble(
                    ("s", "bold"), " stop after the current run and quit   ",
                    ("k", "bold"), " / ", ("esc", "bold"), " keep running",
                ),
                classes="dialog-keys",
            )  # fmt: skip

    def action_answer(self, stop: bool) -> None:
        self.dismiss(stop)


class ConflictModal(ModalScreen[str]):
    """A save found the record changed elsewhere since it was read: say what changed and
    let the person choose. Dismissed with "reload", "merge" or "" (keep editing)."""

    BINDINGS = [
        Binding("r", "answer('reload')", "reload", id="conflict.answer_reload"),
        Binding("m", "answer('merge')", "save mine onto it", id="conflict.answer_merge"),
        Binding("escape", "answer('')", "keep editing", id="conflict.keep_editing"),
    ]

    def __init__(self, what: str, changed: list[tuple[str, str]], mine: list[str]) -> None:
        super().__init__()
        self.what = what
        self.changed = changed  # (field, its stored value now), shown literally
        self.mine = mine  # the fields this form writes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="error-dialog"):
            yield Label(Text(f"The {self.what} was changed elsewhere", style="bold"),
                        id="dialog-title")  # fmt: skip
            body = Text(
                "Since this screen read it, another gpuopt (the command line, another "
                "window) wrote it. Nothing was saved. Stored now:\n"
            )
            for name, value in self.changed or [("(no field)", "written again unchanged")]:
                body.append(f"  {name}: ", style="bold")
                body.append(shown(value, 160))
                body.append("\n")
            yield Static(body, id="dialog-message")
            yield Static(
                Text.assemble(
                    ("r", "bold"), " reload (your unsaved edits here are dropped)\n",
                    ("m", "bold"), f" save your {', '.join(self.mine)} onto the stored version\n",
                    ("esc", "bold"), " keep editing, nothing saved",
                ),
                classes="dialog-keys",
            )  # fmt: skip

    def action_answer(self, choice: str) -> None:
        self.dismiss(choice)


class FormModal(ModalScreen[Any]):
    """A few fields; `submit(values)` returns the result, raises ValidationError (shown under
    the fields) or ValueError (shown under the form); escape cancels."""

    BINDINGS = [
        Binding("ctrl+s,f2", "submit", "save", priority=True, id="form.submit"),
        Binding("escape", "cancel", "cancel", id="form.cancel"),
    ]

    def __init__(
        self,
        title: str,
        fields: list[Field],
        submit: Callable[[dict[str, Any]], Any],
        *,
        checkboxes: list[tuple[str, str, bool]] | None = None,
        note: str = "",
        on_choice: Callable[[FormModal, str, str], None] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.fields = fields
        self.submit_fn = submit
        self.checkboxes = checkboxes or []
        self.note = note
        self.on_choice = on_choice  # (form, field name, value) when a list's choice changes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="form-dialog"):
            yield Label(shown(self.title_text), id="dialog-title")
            if self.note:
                yield Static(shown(self.note, LONG_LIMIT, multiline=True), id="dialog-note")
            with VerticalScroll(id="dialog-body"):
                yield from self.fields
                for name, label, value in self.checkboxes:
                    yield Checkbox(label, value, id=f"check-{name}")
            yield Static("", id="form-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("ctrl+s save", id="save", variant="primary", compact=True)
                yield Button("esc cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.set_class(self.app.size.height < 30, "-narrow-dialog")
        self.query_one("#dialog-body").can_focus = False
        if self.fields:
            first = self.fields[0].query(".-textual-compact").first()
            first.focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if self.on_choice is None:
            return
        for f in self.fields:
            if f in event.select.ancestors:
                self.on_choice(self, f.field_name, f.value)
                return

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.field_name == name)

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.field_name: f.value for f in self.fields}
        for name, _, _ in self.checkboxes:
            out[name] = self.query_one(f"#check-{name}", Checkbox).value
        return out

    def action_submit(self) -> None:
        clear_errors(self.fields)
        err = self.query_one("#form-error", Static)
        err.update("")
        try:
            result = self.submit_fn(self.values())
        except ValidationError as exc:
            loose = show_errors(self.fields, exc)
            err.update(Text(plain("\n".join(loose), LONG_LIMIT, multiline=True)))
            return
        except Exception as exc:  # a gate refusal or an engine error: say it here
            reason = getattr(exc, "reason", None) or exc
            err.update(Text.assemble(("Refused: ", "bold"), plain(reason, LONG_LIMIT)))
            return
        self.dismiss(result)

    def action_cancel(self) -> None:
        """Escape: back to the step; asked first when a field holds typed text."""
        if not self.typed():
            self.dismiss(None)
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)

        self.app.push_screen(
            ConfirmModal("What you typed here is not saved. Discard it?"), answered
        )

    def typed(self) -> bool:
        """A text field changed from what the form opened with."""
        return any(f.choices is None and f.value != f.initial for f in self.fields)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_submit()
        else:
            self.action_cancel()
