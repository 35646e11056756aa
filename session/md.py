"""The markdown table and escaping layer: every cell, table, code block and section head
the session layer writes (the decision record's exporters, the profile's text) goes
through here. A leaf: it imports nothing of ours, so any package may use it.

Every piece of text a person typed reaches the markdown through `md_cell` (one line:
newlines, pipes, backticks, backslashes, brackets, HTML and autolink triggers escaped) or
through a code fence longer than any run of backticks inside it, so no input can break a
table, become HTML or a link on GitHub, or act on the terminal that shows it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum

# Characters a terminal or a code review acts on: C0 (tab and newline aside), DEL, C1, the
# line separators, bidi embeddings, overrides and isolates ("trojan source"), BOM.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")

# Escapes of the characters GFM acts on inside a table cell, HTML and links included.
_CELL = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "|": "&#124;",
        "`": "&#96;",
        "\\": "&#92;",
        "[": "&#91;",
        "]": "&#93;",
        # emphasis and strikethrough: `a*b*` is text a person typed, never italics
        "*": "\\*",
        "~": "\\~",
    }
)
# GFM's extended autolinks start at `scheme://`, `www.` and `user@host`: breaking the
# trigger with an entity keeps the text as it reads and makes no link of it.
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(:)(?=//)|(?<=www)(\.)|(@)(?=[a-z0-9])")
_AUTOLINK_WORDS = {":": "&#58;", ".": "&#46;", "@": "&#64;"}
# An underscore emphasizes only at a word's edge (GFM): `_c_` is escaped, while
# CUDA_VISIBLE_DEVICES stays as it reads, and as it is pasted.
_UNDERSCORES = re.compile(r"_+")


def visible_controls(text: str) -> str:
    """Stored text with its control characters written as escapes (`\\x1b`): a reader
    sees what is there, and nothing acts on the terminal or the page that shows it."""
    return _CONTROL.sub(_visible, text)


def _visible(hit: re.Match[str]) -> str:
    code = ord(hit.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def md_cell(value: object) -> str:
    """Any value, made safe for one markdown table cell (always one line; runs of spaces
    collapse, as the page would collapse them anyway)."""
    if isinstance(value, Enum):
        value = words(value)
    text = "" if value is None else str(value)
    text = " ".join(visible_controls(text.replace("\t", " ")).split())
    if not text:
        return "—"
    text = _UNDERSCORES.sub(_escaped, text.translate(_CELL))
    return _AUTOLINK.sub(lambda hit: _AUTOLINK_WORDS[hit.group(0)], text)


# md_cell's own entities only (a typed "&#27;" was written "&amp;#27;" and reads back as typed)
_ENTITY_TEXT = {
    **{
        v.strip("&;"): k
        for k, v in {
            **_AUTOLINK_WORDS,
            **{chr(k): v for k, v in _CELL.items() if v.startswith("&")},
        }.items()
    },
    "#124": "\\|",  # a pipe keeps its column
}
_ENTITY = re.compile("&(" + "|".join(re.escape(k) for k in _ENTITY_TEXT) + ");")
_EMPHASIS_ESCAPE = re.compile(r"\\([*~_])")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def for_terminal(markdown: str) -> str:
    """The record as a terminal shows it (`gpuopt export` or the headless demo on a
    terminal): the entities `md_cell` wrote for a web page read as their characters, and
    the backslashes before emphasis marks go; a pipe stays `\\|`, so a table keeps its
    columns. Code blocks are left as they are. Control characters are already visible."""
    out, fence = [], ""
    for line in markdown.split("\n"):
        hit = _FENCE.match(line)
        if hit and (not fence or hit.group(1).startswith(fence)):
            fence = "" if fence else hit.group(1)
            out.append(line)
            continue
        if not fence:
            line = _ENTITY.sub(_entity_text, _EMPHASIS_ESCAPE.sub(r"\1", line))
        out.append(line)
    return "\n".join(out)


def _entity_text(hit: re.Match[str]) -> str:
    return _ENTITY_TEXT[hit.group(1)]


def _escaped(hit: re.Match[str]) -> str:
    text, start, end = hit.string, hit.start(), hit.end()
    inside = start > 0 and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()
    return hit.group(0) if inside else "\\_" * (end - start)


# The width the record is laid out for: None for the file (every table whole, as a page
# shows it), a number of columns for a terminal view such as the app's Record step, where
# a table wider than that becomes one line per row (see md_table).
_FIT: ContextVar[int | None] = ContextVar("record_fit", default=None)


@contextmanager
def fitted(width: int | None) -> Iterator[None]:
    """Lay out the record built inside for `width` columns (None: the file's layout)."""
    token = _FIT.set(width)
    try:
        yield
    finally:
        _FIT.reset(token)


def fit_width() -> int | None:
    return _FIT.get()


def table_width(cells: list[list[str]]) -> int:
    """Columns a markdown viewer needs to show `cells` (escaped) uncut: the longest cell of
    each column, one space each side and a border between (what Textual's and GitHub's
    tables take, entities counted as the character they show)."""
    if not cells:
        return 0
    widths = [max(_columns(_shown(row[i])) for row in cells) for i in range(len(cells[0]))]
    return sum(widths) + 3 * len(widths) + 1


def _shown(cell: str) -> str:
    return _ENTITY.sub("x", _EMPHASIS_ESCAPE.sub(r"\1", cell))


def _columns(text: str) -> int:
    """Terminal columns `text` takes: two for a wide character (CJK, most emoji), none
    for a combining mark or a zero-width one, one for the rest."""
    return sum(
        0
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf")
        else 2
        if unicodedata.east_asian_width(c) in ("W", "F")
        else 1
        for c in text
    )


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A markdown table; laid out for a width (see `fitted`) that it does not fit, one
    bullet per row instead, each cell after its heading, so no cell is cut."""
    head = [md_cell(h) for h in headers]
    body = [[md_cell(c) for c in row] for row in rows]
    width = _FIT.get()
    if width is not None and table_width([head, *body]) > width:
        return [_row_line(head, row) for row in body]
    out = ["| " + " | ".join(head) + " |"]
    out.append("|" + "|".join(" --- " for _ in headers) + "|")
    for row in body:
        out.append("| " + " | ".join(row) + " |")
    return out


def _row_line(head: list[str], row: list[str]) -> str:
    """One table row as a bullet: its first cell in bold, then "heading: cell" pairs."""
    first, *rest = row
    if len(rest) == 1:  # field and value
        return f"- **{first}:** {rest[0]}"
    pairs = [f"{h}: {c}" for h, c in zip(head[1:], rest, strict=True) if c != "—"]
    return f"- **{first}**" + (" · " + " · ".join(pairs) if pairs else "")


def md_code(lines: list[str]) -> list[str]:
    """A fenced code block that no backtick run inside it can close."""
    body = "\n".join(visible_controls(line) for line in lines)
    body = " ".join(body.split("\r"))
    longest = max((len(x) for x in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "sh", *body.split("\n"), fence]


def section(lines: list[str], title: str, level: int = 2) -> None:
    """A section head, with exactly one blank line before and after it."""
    while lines and lines[-1] == "":
        lines.pop()
    if lines:
        lines.append("")
    lines += ["#" * level + " " + title, ""]


# ---------------------------------------------------------------------------- words

# Stored values a person reads as words (everything else: underscores become spaces).
_WORDS: dict[str, str] = {
    "not_reproducible": "not reproducible",
    "unjudged": "not judged",
    "end_to_end": "end to end",
    "as_predicted": "as predicted",
    "nothing_moved": "nothing moved",
    "mechanism_only": "mechanism moved, metric did not",
    "metric_only": "metric moved, mechanism did not",
    "opposite_sign": "opposite sign",
    "not_started": "not started",
    "in_progress": "in progress",
    "no_metric": "no metric in the output",
    "N/A": "N/A (no floating-point effect)",
}


def words(value: object) -> str:
    """A stored (enum) value as words: `not_reproducible` → "not reproducible"."""
    raw = value.value if isinstance(value, Enum) else value
    if raw is None:
        return "—"
    text = str(raw)
    return _WORDS.get(text, text.replace("_", " "))


def plain_value(value: object) -> str:
    """A stored option (dict, list, flag) in words, never JSON: `{"warm_up": 2}` →
    "warm up 2"; `["x100", "nan_inf"]` → "x100, nan inf"."""
    if isinstance(value, dict):
        return "; ".join(f"{words(k)} {plain_value(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        return ", ".join(plain_value(v) for v in value) or "—"
    if isinstance(value, bool) or value is None:
        return yes(value)
    return words(value) if isinstance(value, str) and " " not in value else str(value)


def yes(flag: object) -> str:
    return "—" if flag is None else ("yes" if flag else "no")


def fixed(x: float | None, digits: int = 3) -> str:
    """A figure with `digits` decimals; "—" for none or a non-finite one, and 4 significant
    digits past a million (a hostile 1e308 is not a 300-digit cell)."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.4g}" if abs(x) >= 1e6 else f"{x:.{digits}f}"


def figure(x: float | None, unit: str = "") -> str:
    """An absolute figure with 4 significant digits and its unit ("—" when not finite)."""
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.4g} {unit}".strip()


def join(items: Sequence[object] | None, sep: str = "; ") -> str:
    return sep.join(str(x) for x in items or [])


def round_label(number: int | None) -> str:
    return "—" if number is None else f"round {number}"
