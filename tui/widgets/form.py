"""Form fields that show pydantic's validation errors under each field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from tui.display import plain


class Field(Vertical):
    """A label, an input (text or choice) and the error line under it.

    A stored value is shown with its control characters made visible (an Input would send
    them to the terminal as they are); left unedited, the field still gives back the
    stored value exactly, so saving a form never rewrites what it did not change.
    """

    DEFAULT_CSS = """
    Field { height: auto; margin: 0 0 0 0; }
    Field > Label { color: $text-muted; padding: 0 1; }
    Field > Input, Field > Select { width: 1fr; margin: 0 1; }
    Field > Input { background: $boost; }
    Field > Input:focus { background: $primary 30%; }
    Field > Select > SelectCurrent { background: $boost; }
    Field > Select:focus > SelectCurrent { background: $primary 30%; }
    Field > .error { color: $error; height: auto; padding: 0 1; display: none; }
    Field.-invalid > .error { display: block; }
    """

    def __init__(
        self,
        name: str,
        label: str,
        value: str = "",
        *,
        placeholder: str = "",
        choices: Sequence[tuple[str | Text, str]] | None = None,
        allow_blank: bool = False,
    ) -> None:
        super().__init__(id=f"field-{name.replace('.', '-')}")
        self.field_name = name
        self.label = label
        self.initial = value
        self.placeholder = placeholder
        self.choices = choices
        self.allow_blank = allow_blank

    def _choices_with(self, text: str) -> list[tuple[str | Text, str]]:
        """The choices, with a stored value they lack shown as itself (a row from a newer
        gpuopt, or one the command line wrote): the form opens, never crashes on it."""
        choices = list(self.choices or [])
        if text and all(v != text for _, v in choices):
            choices.append((Text(plain(text, 80)), text))
        return choices

    def compose(self) -> ComposeResult:
        yield Label(self.label)
        if self.choices is not None:
            kw: dict[str, Any] = {"allow_blank": self.allow_blank}
            if self.initial:
                self.choices = self._choices_with(self.initial)
                kw["value"] = self.initial
            yield Select(self.choices, compact=True, **kw)
        else:
            yield Input(plain(self.initial, None), placeholder=self.placeholder, compact=True)
        yield Static("", classes="error")

    @property
    def value(self) -> str:
        if self.choices is not None:
            v = self.query_one(Select).value
            return "" if v is Select.NULL else str(v)
        typed = self.query_one(Input).value
        return self.initial if typed == plain(self.initial, None) else typed

    @value.setter
    def value(self, text: str) -> None:
        self.initial = text  # a field not composed yet starts from it
        try:
            if self.choices is not None:
                select = self.query_one(Select)
                if not text:  # an unset optional field: blank where the field allows it
                    if self.allow_blank:
                        select.clear()
                    return
                if all(v != text for _, v in self.choices):
                    self.choices = self._choices_with(text)
                    select.set_options(self.choices)
                select.value = text
            else:
                self.query_one(Input).value = plain(text, None)
        except NoMatches:
            return

    def on_mount(self) -> None:
        if self.choices is not None:
            self.watch(self.query_one(Select), "expanded", self._opened, init=False)

    def _opened(self, expanded: bool) -> None:
        """An open list stays inside the box it is shown in (a dialog): Textual draws it
        below the field over the whole screen, past a short dialog's bottom border."""
        overlay = self.query_one(Select).query_one("SelectOverlay", Widget)
        if not expanded:
            overlay.styles.offset = (0, 0)
            overlay.styles.max_height = None
            return
        self.call_after_refresh(self._fit, overlay, 3)

    def _fit(self, overlay: Widget, tries: int) -> None:
        box = next((w for w in self.ancestors if isinstance(w.parent, Screen)), None)
        if box is None or not isinstance(box, Widget):
            return
        if not overlay.region.height:  # not placed yet: once more after the next frame
            if tries:
                self.call_after_refresh(self._fit, overlay, tries - 1)
            return
        inner = box.region.shrink(box.styles.gutter)
        if inner.height < 3:
            return
        height = min(overlay.region.height, inner.height)
        top = max(min(overlay.region.y, inner.bottom - height), inner.y)
        overlay.styles.max_height = height
        overlay.styles.offset = (0, top - overlay.region.y)  # up over the field, if need be

    def set_choices(self, choices: Sequence[tuple[str | Text, str]]) -> None:
        """New choices for a choice field (its selection is reset)."""
        self.choices = list(choices)
        self.query_one(Select).set_options(self.choices)

    def set_error(self, message: str) -> None:
        # a message may quote what was typed or stored: shown, never read as markup
        self.query_one(".error", Static).update(Text(plain(message, 1000)))
        self.set_class(bool(message), "-invalid")


def clear_errors(fields: Iterable[Field]) -> None:
    for f in fields:
        f.set_error("")


def show_errors(
    fields: Iterable[Field], exc: ValidationError, aliases: dict[str, str] | None = None
) -> list[str]:
    """Put each error under its field; returns those that matched no field."""
    by_name = {f.field_name: f for f in fields}
    aliases = aliases or {}
    loose: list[str] = []
    messages: dict[str, list[str]] = {}
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        msg = err["msg"].removeprefix("Value error, ")
        target = None
        for i in range(len(loc), 0, -1):
            key = ".".join(loc[:i])
            key = aliases.get(key, key)
            if key in by_name:
                target = key
                break
        if target is None:
            loose.append(f"{'.'.join(loc) or 'form'}: {msg}")
        else:
            messages.setdefault(target, []).append(msg)
    for name, msgs in messages.items():
        by_name[name].set_error("; ".join(msgs))
    return loose
