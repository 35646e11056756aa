"""Numeric options: parsed and held to their range (session.limits) by argparse itself, so
a number out of range is one line and exit 2 before any work; each help says the range."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from session.api import out_of_range, range_of  # session.limits: the standard library alone


def number(name: str) -> Callable[[str], float]:
    """An argparse `type` for the option `--name`: its range from session.limits."""

    def parse(text: str) -> float:
        r = range_of(name)
        try:
            value: float = int(text, 10) if r.integer else float(text)
        except ValueError:
            kind = "a whole number" if r.integer else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {kind}; give {r.text()}") from None
        problem = out_of_range(name, value)
        if problem:
            raise argparse.ArgumentTypeError(f"{text}: out of range, give {r.text()}")
        return value

    parse.__name__ = f"--{name}"
    return parse


def within(name: str) -> str:
    """The range of `--name` as its help shows it."""
    return range_of(name).text()
