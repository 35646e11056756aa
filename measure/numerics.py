"""Pure helpers for the numerics of a torch workload check (no torch needed here).

The error statistics themselves are computed by the worker, where the tensors are; this
module holds the tolerance table, the rule that suggests an optimization class from those
statistics, and the wording of audit deltas ("kernel count 7 → 1", "peak −48 MiB").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# torch.testing.assert_close defaults as (rtol, atol); integers and bool compare exactly.
# The worker keeps its own copy (it must run without gpuopt); a test checks they agree.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
    "float8_e4m3fn": (1.25e-1, 1e-3),
    "float8_e4m3fnuz": (1.25e-1, 1e-3),
    "float8_e5m2": (2.5e-1, 1e-3),
    "float8_e5m2fnuz": (2.5e-1, 1e-3),
}

# Under this share of mismatching elements, a failure looks local (an edge, a mask, a
# special value) rather than a precision change spread over the whole output.
LOCAL_SHARE = 0.1


def default_tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for a dtype name such as "float32" or "torch.bfloat16"; exact otherwise."""
    return TOLERANCES.get(dtype.removeprefix("torch."), (0.0, 0.0))


def _get(s: Any, key: str, default: Any = None) -> Any:
    if isinstance(s, Mapping):
        return s.get(key, default)
    return getattr(s, key, default)


def suggest_class(stats: Sequence[Any]) -> tuple[str | None, str]:
    """The optimization class the statistics allow at best, and why, in words.

    bit-identical everywhere → C1 possible; an output dtype changed → C3; NaN/Inf positions
    or signed zeros that differ → C4; all within tolerance → C2 at least; out of tolerance:
    C4 when the mismatches are local (a boundary), C3 when spread. A shape change is a
    failure, not a class (None). The person decides; this is only a suggestion.
    """
    if not stats:
        return None, "no outputs were compared"
    names = lambda pred: ", ".join(str(_get(s, "output")) for s in stats if pred(s))  # noqa: E731
    if any(_get(s, "none_on", "") for s in stats):
        gone = [s for s in stats if _get(s, "none_on", "")]
        words = ", ".join(f"{_get(s, 'output')} on the {_get(s, 'none_on')} side" for s in gone)
        return None, f"gradient is None ({words})"
    if not all(_get(s, "shape_equal", True) for s in stats):
        return None, f"shape differs ({names(lambda s: not _get(s, 'shape_equal', True))})"
    if all(_get(s, "bit_identical", False) for s in stats):
        return "C1", "every output is bit-identical"
    if not all(_get(s, "dtype_equal", True) for s in stats):
        changed = [s for s in stats if not _get(s, "dtype_equal", True)]
        kinds = ", ".join(
            f"{_get(s, 'output')} {_get(s, 'ref_dtype')}→{_get(s, 'new_dtype')}" for s in changed
        )
        return "C3", f"output dtype changed ({kinds})"
    if not all(_get(s, "nonfinite_positions_match", True) for s in stats):
        bad = names(lambda s: not _get(s, "nonfinite_positions_match", True))
        return "C4", f"NaN/Inf positions differ ({bad})"
    if any(_get(s, "signed_zero_diffs", 0) for s in stats):
        return "C4", f"signed zeros differ ({names(lambda s: _get(s, 'signed_zero_diffs', 0))})"
    failing = [s for s in stats if _get(s, "mismatches", 0)]
    if not failing:
        return "C2", "within tolerance, not bit-identical"
    share = max(float(_get(s, "mismatch_share", 0.0) or 0.0) for s in failing)
    which = ", ".join(str(_get(s, "output")) for s in failing)
    if share < LOCAL_SHARE:
        return "C4", f"out of tolerance at a few places ({which}, ≤{share:.1%}): a boundary?"
    return "C3", f"out of tolerance over {share:.0%} of {which}: approximate math at best"


def format_bytes(n: float, signed: bool = False) -> str:
    """48 MiB, 1.5 GiB, 512 B; with signed=True a leading + or − (a real minus sign)."""
    sign = ""
    if signed:
        sign = "+" if n > 0 else ("−" if n < 0 else "±")
    v = abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024 or unit == "TiB":
            # three significant digits, trailing zeros dropped (2 GiB, 1.95 GiB, 48.2 MiB)
            text = f"{v:.0f}" if unit == "B" or v >= 100 else f"{v:.3g}"
            return f"{sign}{text} {unit}"
        v /= 1024
    return f"{sign}{v} TiB"  # unreachable


_COUNTS = (
    ("kernel_launches", "kernel count"),
    ("operator_count", "operators"),
    ("allocation_count", "allocations"),
)


def audit_deltas(base: Any, new: Any) -> list[str]:
    """Audit differences against the baseline in words, e.g. ["kernel count 7 → 1", "peak −48 MiB"].

    Works on Audit models or on the worker's dicts; a figure missing on either side is skipped.
    """
    out: list[str] = []
    for key, label in _COUNTS:
        a, b = _get(base, key), _get(new, key)
        if a is None or b is None:
            continue
        out.append(f"{label} {a} → {b}" if a != b else f"{label} {a} (unchanged)")
    a, b = _get(base, "peak_bytes"), _get(new, "peak_bytes")
    if a is not None and b is not None:
        out.append("peak unchanged" if a == b else f"peak {format_bytes(b - a, signed=True)}")
    a, b = _get(base, "allocated_bytes"), _get(new, "allocated_bytes")
    if a is not None and b is not None:
        out.append(
            "allocated per call unchanged"
            if a == b
            else f"allocated per call {format_bytes(b - a, signed=True)}"
        )
    return out
