"""The record renders on GitHub: parsed with a GFM-like parser (markdown-it-py with tables
and linkify, as Textual ships it), every table has the right column count, and no text a
person typed becomes HTML or a link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from method_full import TEXT_KEYS, build_full_session, texts
from test_broken_export import build_broken_session
from test_record import outside_fences

from ledger import Ledger
from session.record import gather, to_markdown

HOSTILE = [
    "https://evil.com/x",
    "see www.evil.com now",
    "mail me@evil.com",
    "<img src=x onerror=alert(1)>",
    "[click](http://evil.com)",
    "<https://evil.com>",
    "a | b \\| c",
    "&lt;b&gt; &amp; &#60;",
    "![i](http://e/x.png)",
]


def _parser() -> MarkdownIt:
    md = MarkdownIt("gfm-like")  # tables, strikethrough, linkify (linkify-it-py)
    # GFM links `www.` and `scheme://` (and e-mail addresses), not every `name.tld`
    # (bench.py is a file, not Paraguay)
    assert md.linkify is not None
    md.linkify.set({"fuzzy_link": False})
    return md


def _tables(tokens: list[Token]) -> list[list[int]]:
    """Per table, the cell count of each row (header first)."""
    out: list[list[int]] = []
    row = 0
    for t in tokens:
        if t.type == "table_open":
            out.append([])
        elif t.type == "tr_open":
            row = 0
        elif t.type in ("th_open", "td_open"):
            row += 1
        elif t.type == "tr_close":
            out[-1].append(row)
    return out


def _walk(tokens: list[Token]) -> list[Token]:
    flat: list[Token] = []
    for t in tokens:
        flat.append(t)
        if t.children:
            flat += _walk(t.children)
    return flat


def check_gfm(md: str, expect_tables: int = 1) -> list[Token]:
    tokens = _parser().parse(md)
    tables = _tables(tokens)
    assert len(tables) >= expect_tables
    for rows in tables:
        assert rows and all(n == rows[0] for n in rows), rows
    flat = _walk(tokens)
    kinds = {t.type for t in flat}
    assert not kinds & {"html_inline", "html_block"}, "typed text became HTML"
    assert not kinds & {"link_open", "image"}, "typed text became a link"
    return flat


def _render(tmp: Path, builder: Any, *args: Any) -> str:
    with Ledger.open(tmp / "l.db") as ledger:
        s = builder(ledger, *args)
        return to_markdown(gather(ledger, s))


def test_the_demo_like_record_parses_as_gfm(tmp_path: Path) -> None:
    md = _render(tmp_path, build_full_session, texts())
    check_gfm(md, expect_tables=20)


@pytest.mark.slow
def test_the_broken_session_parses_as_gfm(tmp_path: Path) -> None:
    md = _render(tmp_path, build_broken_session)
    check_gfm(md, expect_tables=10)


@pytest.mark.parametrize("text", HOSTILE)
def test_no_typed_text_becomes_html_or_a_link(tmp_path: Path, text: str) -> None:
    md = _render(tmp_path, build_full_session, texts(**{k: text for k in TEXT_KEYS}))
    flat = check_gfm(md, expect_tables=20)
    # and the text reads as typed: the parser's text holds it whole
    shown = "".join(t.content for t in flat if t.type == "text")
    assert " ".join(text.split()) in shown
    # the parser links no bare www. without fuzzy links; GitHub does: the trigger is broken
    assert "www.evil" not in "\n".join(outside_fences(md))
