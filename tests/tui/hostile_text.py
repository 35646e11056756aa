"""Hypothesis strategies for stored text that tries to act on a terminal or a markup parser."""

from __future__ import annotations

import unicodedata

from hypothesis import strategies as st

FRAGMENTS = [
    "[", "]", "[/dev/shm]", "[/]", "[bold]", "[fp16]", "[red on blue]", "[link=http://x]",
    "[@click=app.quit]", "[$accent]", "\\", "\\[", ":smile:", "$(id)", "%s",
    "\x1b]0;pwned\x07",  # OSC 0: retitle the terminal
    "\x1b[2J", "\x1b[H", "\x1b[31m",  # CSI: clear, home, colour
    "\x1b]52;c;aGVsbG8=\x07",  # OSC 52: write the clipboard
    "\x1b]8;;http://evil.example\x1b\\",  # OSC 8: plant a link
    "\x9b2J", "\x9d0;x\x9c", "\x90q\x9c",  # the same as one-byte C1 controls
    "\x07", "\x08", "\r", "\x00", "\x7f", "\x0b", "\x0c", "\u202e", "\u2028", "\x85",
]  # fmt: skip


def _text(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS),
            st.text(st.characters(codec="utf-8"), max_size=max_size),
        ),
        min_size=1,
        max_size=8,
    ).map("".join)


def hostile(forbid: str = "", max_size: int = 6) -> st.SearchStrategy[str]:
    """Non-blank text with no edge blanks (as the models ask) and none of `forbid`."""
    return _text(max_size).filter(
        lambda s: bool(s.strip()) and s == s.strip() and not any(c in s for c in forbid)
    )


def raw_controls(out: str, allowed: str = "\n") -> list[str]:
    """The control characters (C0, DEL, C1) in `out` other than `allowed`."""
    return [c for c in out if unicodedata.category(c) == "Cc" and c not in allowed]
