"""The noise band: its smallest value and its words. Standard library only."""

from __future__ import annotations

__all__ = ["MIN_THRESHOLD", "band"]

MIN_THRESHOLD = 0.001  # ±0.1%: narrower than any run-to-run noise a process shows


def band(threshold: float) -> str:
    """A noise band in words: ±2%, ±2.5%."""
    return f"±{threshold * 100:.3g}%"
