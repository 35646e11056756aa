"""What the command line prints from a ledger someone else prepared: JSON listings carry no
raw control character, and a row that does not read back is named, never silently gone."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from method_factory import make_baseline, make_comparison, make_round, make_session, make_variant

from ledger import Ledger
from session import models as m
from tui.cli import main

C1_TITLE = "x\u009d0;PWNED\u009c\u009b2J \u202eevil \x1b[2J"


def _raw_controls(text: str) -> list[str]:
    return [
        c for c in text
        if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0
        or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069
    ]  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "l.db"
    with Ledger.open(path) as ledger:
        s = make_session(ledger)
        s.title = C1_TITLE
        ledger.put(s)
        b = make_baseline(ledger, s)
        v = make_variant(ledger, s)
        r = make_round(ledger, s, b, [v])
        make_comparison(ledger, r, v)
        ledger.put(m.Hypothesis(session_id=s.id, title=C1_TITLE))
    return path, s.id


@pytest.mark.parametrize(
    "args",
    [["sessions", "--json"], ["hypothesis", "list", "{sid}", "--json"],
     ["variant", "list", "{sid}", "--json"]],
    ids=["sessions", "hypotheses", "variants"],
)  # fmt: skip
def test_json_listings_escape_what_a_terminal_acts_on(
    db: tuple[Path, str], capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    path, sid = db
    code = main(["--ledger", str(path), *(a.format(sid=sid) for a in args)])
    out = capsys.readouterr().out
    assert code == 0 and _raw_controls(out) == []
    if args[0] in ("sessions", "hypothesis"):
        titles = [r["title"] for r in json.loads(out)]
        assert C1_TITLE in titles  # the same value to a parser


def _spoil(path: Path, table: str) -> None:
    raw = sqlite3.connect(path)
    raw.execute(f"UPDATE {table} SET data = json_set(data, '$.evil', 1)")
    raw.commit()
    raw.close()


# Each table, with the commands that list its rows.
SHOWN_BY = {
    "variants": [["variant", "list", "{sid}"], ["export", "{sid}"]],
    "hypotheses": [["hypothesis", "list", "{sid}"], ["export", "{sid}"]],
    "comparisons": [["export", "{sid}"], ["export", "{sid}", "--format", "json"]],
    "baselines": [["export", "{sid}"]],
    "rounds": [["export", "{sid}"]],
}


@pytest.mark.parametrize("table", list(SHOWN_BY))
def test_an_unreadable_row_is_named_wherever_it_is_left_out(
    db: tuple[Path, str], capsys: pytest.CaptureFixture[str], table: str
) -> None:
    path, sid = db
    _spoil(path, table)
    for args in SHOWN_BY[table]:
        code = main(["--ledger", str(path), *(a.format(sid=sid) for a in args)])
        _, err = capsys.readouterr()
        assert code == 0, (args, err)
        assert f"unreadable row: {table} rowid 1" in err and "(left out)" in err, (args, err)
