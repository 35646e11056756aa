"""How a figure is written, wherever it is shown: the CLI, the app and the record.

One module, so one value reads the same at every door (the CLI once wrote a ratio
`0.7310` and an ETA `1m05s` where the app wrote `0.731` and `1:05`):

- ``ratio_text(x)``: "0.731" (three decimals: a tenth of a percent, finer than any band).
- ``ci_text(low, high, confidence=None)``: "0.731–0.755" under a heading that names the
  confidence ("99.8% CI", ``session.verdicts.ci_heading``); with ``confidence`` the cell
  says its own, "99.8% CI 0.731–0.755" (a table whose rows differ in confidence).
- ``confidence_text(confidence)``: "99.8%", "99%", "95%".
- ``eta_text(seconds)``: "42s", "1m05s", "2h03m" (shown after "ETA ").
- ``bytes_text(n, signed=False)``: "512 B", "12 KiB", "3.5 MiB", "5 GiB"; signed gives a
  leading "+", "−" (a real minus sign) or "±" for no change. It is measure's own
  ``measure.numerics.format_bytes`` (measure imports nothing of ours, and writes bytes in
  its own measurement words), taking None as "—".
- ``VERDICT_STYLE`` / ``verdict_style(word)``: each verdict word's colour, as a Rich style
  name (a string: the core never imports Rich).

Standard library (and measure's bytes) only: every layer above measure may import it.
"""

from __future__ import annotations

import math

from measure.numerics import format_bytes

DASH = "—"  # a figure that is not there

VERDICT_STYLE: dict[str, str] = {
    "FASTER": "bold green",
    "SLOWER": "bold red",
    "SAME": "bold cyan",
    "INCONCLUSIVE": "bold yellow",
    "MEASURABLE": "bold blue",
    "BROKEN": "bold magenta",
    "FAILED": "bold magenta",
}


def verdict_style(word: str) -> str:
    """The style of a verdict word; a word not in the vocabulary is only bold."""
    return VERDICT_STYLE.get(word, "bold")


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def ratio_text(x: float | None) -> str:
    return f"{x:.3f}" if x is not None and _finite(x) else DASH


def confidence_text(confidence: float) -> str:
    """99.8%, 99%, 95%: the fewest digits that tell the confidence."""
    return f"{confidence * 100:.3g}%"


def ci_text(low: float | None, high: float | None, confidence: float | None = None) -> str:
    """The interval; with `confidence`, labelled: "99.8% CI 0.731–0.755"."""
    if low is None or high is None or not (_finite(low) and _finite(high)):
        return DASH
    text = f"{low:.3f}–{high:.3f}"
    return text if confidence is None else f"{confidence_text(confidence)} CI {text}"


def eta_text(seconds: float | None) -> str:
    if seconds is None or not _finite(seconds) or seconds < 0:
        return DASH
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def bytes_text(n: float | None, signed: bool = False) -> str:
    if n is None or not _finite(float(n)):
        return DASH
    return format_bytes(n, signed=signed)
