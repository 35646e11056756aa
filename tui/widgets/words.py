"""Counted words for the app's own sentences: "1 answer", "3 answers", never "answer(s)"."""

from __future__ import annotations


def count(n: int, one: str, many: str | None = None) -> str:
    """`n` and the noun in the right number (`many` where the plural is not one + "s")."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
