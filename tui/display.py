"""Stored text, shown safely: the one function every listing and screen passes it through.

A ledger holds text that people (or a foreign ledger's author) typed: titles, names,
commands, output tails. On its way to a terminal such text must never act as anything
but text:

- Rich/Textual markup is not parsed: `bench[fp16]` stays `bench[fp16]` and
  `[/dev/shm]` cannot raise a MarkupError. `shown()` gives a `rich.text.Text`, which
  neither Rich nor Textual reads as markup or emoji codes. (Never place stored text in a
  markup template: `rich.markup.escape` leaves `\\[` to be read as an escaped bracket.
  Build a Text with `Text.assemble` instead.)
- Control characters are made visible in Python's escape notation: ESC is shown as the
  four characters `\\x1b`, a C1 CSI as `\\x9b`, CR as `\\r`, DEL as `\\x7f`, a bidi
  override as `\\u202e`. So OSC 0/8/52 and CSI sequences reach the terminal as harmless
  printable text, and the reader can still see (and copy) what was stored. In a Text the
  escapes are styled `reverse`, so they are told apart from a literal backslash.
- Long values are cut for display (`limit` characters, with a note of how many more), so
  a 20 MB title costs a listing no more than a short one. Exports and JSON keep the whole
  value; only what is shown is cut.

Newlines (and tabs) are kept only where the caller says the value is `multiline`
(a reset procedure, an output tail); in a table cell or a one-line label they are shown
as `\\n` and `\\t`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

LIMIT = 200  # characters of one value in a listing or a label
LONG_LIMIT = 4000  # a multi-line value shown whole (a procedure, an output tail)

_INVISIBLE = [
    *range(0x00, 0x20),  # C0, ESC included
    0x7F,  # DEL
    *range(0x80, 0xA0),  # C1: CSI, OSC, ST... one byte in 8-bit terminals
    0x2028,  # line and paragraph separators: break a line without a newline
    0x2029,
    *range(0x202A, 0x202F),  # bidi embeddings and overrides ("trojan source")
    *range(0x2066, 0x206A),  # bidi isolates
    0xFEFF,  # zero-width no-break space
]
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape_of(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_ONE_LINE = {code: _escape_of(code) for code in _INVISIBLE}
_MULTI_LINE = {k: v for k, v in _ONE_LINE.items() if k not in (0x09, 0x0A)}


def _cut(
    value: Any, limit: int | None, brief: bool = False, length: int | None = None
) -> tuple[str, str]:
    """`length`: the whole value's length, when the reader already cut `value` short."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    whole = max(length or 0, len(text))
    if limit is None or whole <= limit:
        return text, ""
    if brief:  # a narrow column: one character says it goes on
        return text[: max(limit - 1, 0)], "…"
    return text[:limit], f"… ({whole - limit:,} more characters)"


def plain(
    value: Any,
    limit: int | None = LIMIT,
    multiline: bool = False,
    brief: bool = False,
    length: int | None = None,
) -> str:
    """`value` as printable text: control characters escaped, cut to `limit` characters
    (`brief`: within `limit` with a one-character "…", for a narrow column).

    For output that is not Rich (print, argparse, a notification without markup).
    """
    text, more = _cut(value, limit, brief, length)
    return text.translate(_MULTI_LINE if multiline else _ONE_LINE) + more


def shown(
    value: Any,
    limit: int | None = LIMIT,
    style: str = "",
    multiline: bool = False,
    brief: bool = False,
    length: int | None = None,
) -> Text:
    """`value` as a Rich Text for a table cell, a label or a line: never read as markup."""
    text, more = _cut(value, limit, brief, length)
    table = _MULTI_LINE if multiline else _ONE_LINE
    out = Text(style=style)
    if text.translate(table) == text:  # the common case: nothing to escape
        out.append(text)
    else:
        start = 0
        for i, ch in enumerate(text):
            if ord(ch) in table:
                out.append(text[start:i])
                out.append(table[ord(ch)], style="reverse")
                start = i + 1
        out.append(text[start:])
    if more:  # how much was cut, dimmed; a brief "…" looks like the text it ends
        out.append(more, style="" if brief else "dim")
    return out


def cell(
    value: Any,
    limit: int | None = LIMIT,
    style: str = "",
    brief: bool = False,
    length: int | None = None,
) -> Text:
    """`shown()` for a DataTable cell: one line, no trailing newline (as the table makes of
    a plain string)."""
    out = shown(value, limit, style=style, brief=brief, length=length)
    out.end = ""
    out.no_wrap = True
    return out


# What json.dumps leaves raw and a terminal may act on: DEL, C1, line separators, bidi
# controls, BOM (C0 characters it escapes itself).
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in _INVISIBLE if code >= 0x7F}


def json_safe(text: str) -> str:
    """JSON with those characters written as \\u escapes: the same document to a parser
    (they can occur only inside strings), inert in a terminal."""
    return text.translate(_JSON_ESCAPES)


class _QuietWhenClosed(Console):
    """Rich's console exits the program (SystemExit 1) when its reader goes away, and sends
    stdout to /dev/null whichever stream broke. A command's progress and tables are for
    the reader only: `gpuopt round ... 2>&1 | head -1` must not fail the measurement."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self.file.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError):
            pass  # no descriptor to redirect: quiet is enough


def console(**options: Any) -> Console:
    """The console every command prints through (Rich's options)."""
    return _QuietWhenClosed(**options)


__all__ = ["LIMIT", "LONG_LIMIT", "cell", "console", "json_safe", "plain", "shown"]


def home_short(path: str | Path) -> str:
    """A path under the home directory as ~/…, as the person would type it."""
    p = Path(path)
    try:
        return "~/" + str(p.relative_to(Path.home()))
    except ValueError:
        return str(p)
