"""A ratio with its confidence interval drawn as text against the noise band.

    ├──■──┤   ·····│·····
The axis is logarithmic and centred on 1.0 (no change); the dotted band is ±threshold;
`■` is the estimate, `├ ┤` the interval. Pure functions: easy to test, cheap to draw.
"""

from __future__ import annotations

import math

from rich.text import Text

from session import models as m
from session.api import VERDICT_STYLE, verdict_style

__all__ = ["VERDICT_STYLE", "common_span", "ratio_bar", "verdict_text"]


def verdict_text(verdict: m.Verdict | str, broken: bool = False) -> Text:
    word = (
        "BROKEN" if broken else (verdict.value if isinstance(verdict, m.Verdict) else str(verdict))
    )
    return Text(word, style=verdict_style(word))


def ratio_bar(
    ratio: float | None,
    low: float | None,
    high: float | None,
    threshold: float,
    width: int = 30,
    verdict: str = "",
    span: float | None = None,
) -> Text:
    """The interval against the band, `width` cells wide; `span` (the half-width of the
    axis in log units, see `common_span`) keeps several bars on one scale."""
    width = max(width, 9)
    if ratio is None or low is None or high is None or ratio <= 0 or low <= 0 or high <= 0:
        return Text("·" * width, style="dim")
    if span is None:
        span = common_span([(low, high)], threshold)
    mid = (width - 1) / 2

    def pos(x: float) -> int:
        return max(0, min(width - 1, round(mid + math.log(x) / span * mid)))

    cells = [" "] * width
    styles = [""] * width
    b0, b1 = pos(1 - threshold), pos(1 + threshold)
    for i in range(b0, b1 + 1):
        cells[i], styles[i] = "·", "dim"
    c = pos(1.0)
    cells[c], styles[c] = "│", "dim"
    lo, hi, est = pos(low), pos(high), pos(ratio)
    style = verdict_style(verdict)
    for i in range(lo, hi + 1):
        cells[i], styles[i] = "─", style
    cells[lo], cells[hi] = "├", "┤"
    if lo == hi:
        cells[lo] = "┼"
    cells[est], styles[est] = "■", style
    text = Text()
    for ch, st in zip(cells, styles, strict=True):
        text.append(ch, style=st or None)
    return text


def common_span(intervals: list[tuple[float | None, float | None]], threshold: float) -> float:
    """Half-width of a log axis, centred on 1, that holds every interval and the band."""
    widest = 3 * math.log1p(threshold)
    for lo, hi in intervals:
        for x in (lo, hi):
            if x is not None and x > 0:
                widest = max(widest, abs(math.log(x)))
    return max(widest, 0.01) * 1.15
