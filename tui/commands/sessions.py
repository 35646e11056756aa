"""`gpuopt sessions`: list the sessions of a ledger.

On a terminal: a table that fits its width, one line per session (long titles and paths
end in "…", narrow terminals drop the columns that matter least). Elsewhere (a pipe, a
file): plain tab-separated lines, no header, for `cut` and `while read`. `--json`: whole
values. Archived sessions are left out unless `--all`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import Any

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from session import api
from tui.commands.common import ledger_path, open_ledger, print_json
from tui.display import console as make_console
from tui.display import plain, shown

PLAIN_LIMIT = 1000  # what the listing reads of a title or path (--json: all of it)
COUNTS = ("baselines", "hypotheses", "variants", "rounds")
# The table's columns by the width they need: the first set that fits is shown.
LAYOUTS = (
    (100, ("id", "title", "repo", "created", *COUNTS)),
    (72, ("id", "title", "repo", "created")),
    (50, ("id", "title", "created")),
    (22, ("id", "title")),
    (0, ("id",)),  # an id is never cut (it is what the person copies): it alone, whole
)


def run(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []
    unreadable: list[str] = []
    path = ledger_path(args)
    if path.exists():  # no ledger yet: no sessions yet
        with open_ledger(args, readonly=True) as ledger:
            rows = api.listing_rows(ledger, cut=not args.json)  # JSON keeps whole values
            # every session row validated (a bad one is named below), and its archive mark
            archived = {s.id: s.archived for s in api.sessions(ledger)}
            unreadable = [str(r) for r in api.unreadable(ledger)]
        for r in rows:
            r["archived"] = archived.get(r["id"], False)
        if not args.all:
            rows = [r for r in rows if not r["archived"]]
    if args.json:
        print_json(rows)
        for line in unreadable:  # stdout stays the JSON list of sessions
            print(f"gpuopt: {plain(line, 1000)}", file=sys.stderr)
        return 0
    if not sys.stdout.isatty():
        _print_plain(rows, unreadable, path)
        return 0
    _print_table(rows, unreadable, path)
    return 0


def _none_yet(path: Any) -> list[Any]:
    """What an empty listing says, as (text, style) parts."""
    where = "" if path.exists() else f"No ledger at {plain(path, None)} yet. "
    return [
        f"{where}No sessions yet. Start one with ", ("gpuopt new", "bold"), " or ",
        ("gpuopt demo", "bold"), ".",
    ]  # fmt: skip


def _print_plain(rows: list[dict[str, Any]], unreadable: list[str], path: Any) -> None:
    """Tab-separated lines; what is said to the person (none yet, a row left out) goes to
    stderr, so stdout holds only data."""
    for r in rows:
        fields = [
            plain(r["id"]), plain(r["title"], PLAIN_LIMIT, length=r["title_length"]),
            plain(r["repo"], PLAIN_LIMIT, length=r["repo_length"]), plain(r["created_at"]),
            *(str(r[c]) for c in COUNTS), "archived" if r["archived"] else "",
        ]  # fmt: skip
        print("\t".join(fields))
    if not rows:
        text = "".join(p if isinstance(p, str) else p[0] for p in _none_yet(path))
        print(f"gpuopt: {text}", file=sys.stderr)
    for line in unreadable:
        print(f"gpuopt: {plain(line, 1000)}", file=sys.stderr)


FIXED = {"id": 12, "created": 16}  # never cut: a session id, a date to the minute
GAP = 2  # the table's padding between two columns


def _widths(columns: tuple[str, ...], width: int) -> dict[str, int]:
    """The widest the title and repo columns may be so that a line fits `width`: what the
    fixed columns leave, two parts to the title for one to the path."""
    fixed = sum(FIXED.get(c, len(c)) for c in columns if c not in ("title", "repo"))
    left = max(width - fixed - GAP * (len(columns) - 1), 8)
    if "repo" not in columns:
        return {"title": left}
    title = max(left * 2 // 3, 4)
    return {"title": title, "repo": max(left - title, 4)}


def _print_table(rows: list[dict[str, Any]], unreadable: list[str], path: Any) -> None:
    console = make_console()
    if console.width < 1:  # COLUMNS=0 (or a terminal that says 0): ask the terminal itself
        console = make_console(width=max(shutil.get_terminal_size().columns, 1))
    if not rows:
        console.print(Text.assemble(*_none_yet(path)), soft_wrap=True)
        return
    id_width = max(cell_len(plain(r["id"])) for r in rows)
    longer = id_width - FIXED["id"]  # the layouts' widths are for ids of FIXED["id"]
    columns = next(cols for least, cols in LAYOUTS if console.width >= least + longer)
    if columns == ("id",):  # narrower than an id and a scrap of title: the ids, whole
        console.print(Text("id", style="bold"))
        for r in rows:
            console.print(shown(r["id"]), soft_wrap=True)  # wraps, never cut
        return
    widths = _widths(columns, console.width)
    table = Table(box=None, header_style="bold", pad_edge=False, expand=False)
    for col in columns:  # every cell one line; titles and paths give way, with an ellipsis
        table.add_column(
            col,
            justify="right" if col in COUNTS else "left",
            no_wrap=True,
            overflow="ellipsis",
            min_width=id_width if col == "id" else None,
            max_width=widths.get(col),
        )
    for r in rows:  # stored text: shown literally, controls visible, long values cut
        title = shown(r["title"], length=r["title_length"], brief=True)
        if r["archived"]:  # before the title: a cut title keeps it
            title = Text.assemble(("(archived) ", "dim"), title)
        cells: dict[str, Text | str] = {
            "id": shown(r["id"]),
            "title": title,
            "repo": shown(r["repo"], length=r["repo_length"], brief=True),
            "created": shown(str(r["created_at"])[:16].replace("T", " ")),
            **{c: str(r[c]) for c in COUNTS},
        }
        table.add_row(*(cells[c] for c in columns))
    console.print(table)
    for line in unreadable:  # the rest is listed; this row is named, table and rowid
        console.print(Text(plain(line, 1000), style="yellow"), soft_wrap=True)
