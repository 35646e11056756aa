"""A bisection drawn as text: the measured commits in history order with their ratios to
good, coloured by what the search made of each (the words and figures are the session
layer's, session.bisect.words; only the colours are this view's)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from session.api import answer_lines, commit_marks, summary_line
from tui.display import plain

MARK_STYLE: dict[str, str] = {
    "good": "green",
    "earlier": "green",
    "bad": "red",
    "later": "red",
    "change": "bold magenta",
    "both": "yellow",
    "flat": "cyan",
    "skipped": "dim",
    "undecided": "yellow",
}


def commit_line(rec: Any) -> Text:
    text = Text("ratio to good: ")
    for k, mark in enumerate(commit_marks(rec)):
        if k:
            text.append(" · ", style="dim")
        ratio = "—" if mark.ratio is None else f"{mark.ratio:.2f}"
        tag = "" if mark.mark in ("good", "bad", "earlier", "later") else f" {mark.mark}"
        text.append(f"#{mark.index} {ratio}{tag}", style=MARK_STYLE.get(mark.mark, ""))
    return text


def bisection_view(rec: Any) -> Group:
    """One bisection for the review: its summary, its line of commits and its answer."""
    head = Text(f"{plain(rec.id[:12])} {rec.status.value} ", style="bold")
    head.append(plain(summary_line(rec), 2000), style="")
    lines = [Text("  " + plain(line, 2000)) for line in answer_lines(rec)]
    return Group(head, commit_line(rec), *lines, Text(""))


def bisections_view(records: list[Any]) -> Group:
    if not records:
        return Group(Text("This ledger holds no bisections.", style="dim"))
    return Group(*(bisection_view(r) for r in records))
