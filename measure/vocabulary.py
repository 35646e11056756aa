"""The measurement vocabulary, spelled once: a run's trust, a comparison's verdict, a run's
status. `measure` speaks it, `session.models` re-exports it, the ledger stores its values.

(The telemetry sample type is `measure.telemetry.Sample`; its columns, `COLUMNS`, are the
ledger's telemetry columns.) Standard library only, so every layer can import it cheaply.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["RunStatus", "Trust", "Verdict"]


class Trust(StrEnum):
    """Whether a run's telemetry lets it count (measure.telemetry.trust says the rule)."""

    CLEAN = "clean"
    WARN = "warn"
    UNTRUSTED = "untrusted"
    UNKNOWN = "unknown"


class Verdict(StrEnum):
    """A comparison's verdict against the noise band (the paired statistics give the first
    five; an arm without values is FAILED or BROKEN)."""

    FASTER = "FASTER"
    SLOWER = "SLOWER"
    SAME = "SAME"
    INCONCLUSIVE = "INCONCLUSIVE"
    # A real change (the interval excludes no change) not shown to clear the band: said in
    # words ("1.8% slower (real, below the ±2% band)"), never a win.
    MEASURABLE = "MEASURABLE"
    FAILED = "FAILED"  # the arm gave no value (every run, or its warm-up, failed)
    BROKEN = "BROKEN"  # as FAILED, and its correctness check failed too


class RunStatus(StrEnum):
    """How one run ended (the runner gives the first four; the session quarantines)."""

    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    NO_METRIC = "no_metric"
    QUARANTINED = "quarantined"
