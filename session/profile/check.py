"""Did the mechanism move? A variant's profile against the baseline's, and the hypothesis's
predicted evidence checked against that movement; and the estimates a profile gives a
hypothesis before anything runs (its Amdahl ceiling, the bytes a fusion would save).

Pure functions of stored profile summaries (session.profile): no torch, no ledger writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from measure.numerics import format_bytes
from measure.profiling.roofline import amdahl_ceiling, si

TOLERANCE = 0.05  # a figure moved when it changed by more than this share

# The figures compared, with the words a person uses for each.
FIGURES: dict[str, str] = {
    "launches": "launches per step",
    "operator_count": "operators per step",
    "bytes": "bytes moved per step",
    "flops": "FLOPs per step",
    "intermediate_bytes": "intermediate bytes",
    "intermediate_count": "intermediate tensors",
    "largest_intermediate": "largest intermediate",
    "peak_live_bytes": "peak of live bytes",
}
_BYTES = {"bytes", "intermediate_bytes", "largest_intermediate", "peak_live_bytes"}
_WORDS: dict[str, re.Pattern[str]] = {
    "launches": re.compile(r"kernel|launch", re.I),
    "operator_count": re.compile(r"operator|\bops?\b|op count", re.I),
    "intermediate_bytes": re.compile(r"intermediate|temporar|materiali[sz]", re.I),
    "bytes": re.compile(r"\bbytes\b|traffic|memory traffic|bandwidth", re.I),
    "peak_live_bytes": re.compile(r"peak|footprint", re.I),
    "flops": re.compile(r"\bflops?\b", re.I),
}
_DOWN = re.compile(
    r"fewer|less|lower|reduc|drop|remov|eliminat|smaller|decreas|down|cut|\bno\b", re.I
)
_UP = re.compile(r"more|higher|increas|larger|grow|rise|\bup\b", re.I)
_ARROW = re.compile(r"(\d[\d,.]*)\s*(?:→|->|=>|\bto\b)\s*(\d[\d,.]*)")
_SIZE = re.compile(r"\bno\b[^.;,\n]*?(\d[\d.]*)\s*(B|KiB|KB|MiB|MB|GiB|GB)\b", re.I)
_UNITS = {
    "b": 1,
    "kib": 1 << 10,
    "kb": 1000,
    "mib": 1 << 20,
    "mb": 10**6,
    "gib": 1 << 30,
    "gb": 10**9,
}


def figures(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The compared figures of one profile summary."""
    work = summary.get("work") or {}
    rows = [r for r in summary.get("intermediates") or [] if r.get("kind") == "intermediate"]
    largest = summary.get("largest_intermediate") or {}
    peak = summary.get("live_peak") or {}

    def num(x: Any) -> float | None:
        return float(x) if isinstance(x, (int, float)) else None

    return {
        "launches": num(summary.get("launches")),
        "operator_count": num(summary.get("operator_count")),
        "bytes": num(work.get("bytes")),
        "flops": num(work.get("flops")),
        "intermediate_bytes": float(sum(int(r.get("bytes") or 0) for r in rows)),
        "intermediate_count": num(summary.get("intermediate_count")),
        "largest_intermediate": num(largest.get("bytes")) if largest else 0.0,
        "peak_live_bytes": num(peak.get("bytes")),
    }


def _show(name: str, x: float | None) -> str:
    if x is None:
        return "—"
    if name in _BYTES:
        return format_bytes(x)
    return si(x, "FLOP") if name == "flops" else f"{x:g}"


@dataclass
class Movement:
    """A variant's profile against the baseline's, figure by figure."""

    workload: str
    before: dict[str, float | None]
    after: dict[str, float | None]
    moved: dict[str, int]  # figure -> -1 (down), +1 (up); unmoved figures are absent
    dominant: tuple[str | None, str | None]

    def lines(self) -> list[str]:
        out = []
        for name, label in FIGURES.items():
            a, b = self.before.get(name), self.after.get(name)
            if a is None or b is None:
                continue
            state = "" if name in self.moved else " (unchanged)"
            out.append(f"{label} {_show(name, a)} → {_show(name, b)}{state}")
        d0, d1 = self.dominant
        if d0 or d1:
            out.append(f"dominant op {d0 or '—'} → {d1 or '—'}")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "before": self.before,
            "after": self.after,
            "moved": self.moved,
            "dominant": list(self.dominant),
            "lines": self.lines(),
        }


def compare(
    base: Mapping[str, Any], variant: Mapping[str, Any], tolerance: float = TOLERANCE
) -> Movement:
    before, after = figures(base), figures(variant)
    moved: dict[str, int] = {}
    for name in FIGURES:
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            continue
        if abs(b - a) > tolerance * max(abs(a), 1.0):
            moved[name] = 1 if b > a else -1
    dom = (
        (base.get("dominant") or {}).get("name"),
        (variant.get("dominant") or {}).get("name"),
    )
    return Movement(str(variant.get("workload", "")), before, after, moved, dom)


# ---------------------------------------------------------------------------- predictions


@dataclass
class Check:
    """One claim of the predicted evidence, against what the profiles show."""

    claim: str
    figure: str
    held: bool | None  # None: the profiles cannot say
    observed: str

    def line(self) -> str:
        verdict = {True: "held", False: "did not hold", None: "not checkable"}[self.held]
        return f"“{self.claim}”: {verdict} ({self.observed})"


def _to_float(text: str) -> float:
    return float(text.replace(",", ""))


def check_predictions(text: str, movement: Movement, variant: Mapping[str, Any]) -> list[Check]:
    """Each clause of the predicted evidence that names a profile figure, checked: "launches
    5→1" wants the variant's value, "no 16 MiB temporary" wants no intermediate of that size
    left, "fewer launches" wants the figure down."""
    checks: list[Check] = []
    for clause in re.split(r"[.;\n]|,\s|\band\b", text):
        clause = clause.strip()
        if not clause:
            continue
        size = _SIZE.search(clause)
        if size and _WORDS["intermediate_bytes"].search(clause):
            want = _to_float(size.group(1)) * _UNITS[size.group(2).lower()]
            rows = [
                r
                for r in variant.get("intermediates") or []
                if r.get("kind") == "intermediate"
                and abs(int(r.get("bytes") or 0) - want) <= 0.1 * want
            ]
            seen = ", ".join(f"{format_bytes(r['bytes'])} from {r['producer']}" for r in rows[:3])
            checks.append(
                Check(
                    clause,
                    "intermediate_bytes",
                    not rows,
                    f"still there: {seen}" if rows else f"no intermediate of {format_bytes(want)}",
                )
            )
            continue
        for name, pattern in _WORDS.items():
            if not pattern.search(clause):
                continue
            before, after = movement.before.get(name), movement.after.get(name)
            if before is None or after is None:
                checks.append(Check(clause, name, None, f"no {FIGURES[name]} in both profiles"))
                break
            seen = f"{FIGURES[name]} {_show(name, before)} → {_show(name, after)}"
            arrow = _ARROW.search(clause)
            if arrow:
                want = _to_float(arrow.group(2))
                checks.append(Check(clause, name, abs(after - want) <= 0.05 * max(want, 1), seen))
            else:
                sign = -1 if _DOWN.search(clause) else 1 if _UP.search(clause) else 0
                got = movement.moved.get(name, 0)
                checks.append(Check(clause, name, got != 0 if sign == 0 else got == sign, seen))
            break
    return checks


def mechanism(
    predicted_evidence: str,
    base: Mapping[str, Mapping[str, Any]],
    variant: Mapping[str, Mapping[str, Any]],
) -> tuple[str, str, list[Check], list[Movement]] | None:
    """The measured mechanism movement across the workloads profiled on both arms:
    (state, why, checks, movements), state as_predicted, opposite or unmoved; None when no
    workload has a profile on both sides."""
    common = [w for w in variant if w in base]
    if not common:
        return None
    movements = [compare(base[w], variant[w]) for w in common]
    checks = [
        c
        for w, mv in zip(common, movements, strict=True)
        for c in check_predictions(predicted_evidence, mv, variant[w])
    ]
    decided = [c for c in checks if c.held is not None]
    if decided:
        held = [c for c in decided if c.held]
        if held and len(held) == len(decided):
            return (
                "as_predicted",
                "the profile shows the predicted evidence: " + "; ".join(c.line() for c in held),
                checks,
                movements,
            )
        failed = [c for c in decided if not c.held]
        moved_other_way = [
            c for c in failed
            if any(mv.moved.get(c.figure) for mv in movements) and "→" in c.observed
        ]  # fmt: skip
        if moved_other_way and not held:
            return (
                "opposite",
                "the profile moved, not as predicted: " + "; ".join(c.line() for c in failed),
                checks,
                movements,
            )
        return (
            "unmoved",
            "the profile does not show the predicted evidence: "
            + "; ".join(c.line() for c in failed),
            checks,
            movements,
        )
    moved = [line for mv in movements for line in mv.lines() if "(unchanged)" not in line]
    if any(mv.moved for mv in movements):
        return "as_predicted", "the profile moved: " + "; ".join(moved), checks, movements
    return "unmoved", "the profiles of baseline and variant are alike", checks, movements


# ---------------------------------------------------------------------------- estimates


@dataclass
class Estimate:
    """What a profile says a hypothesis could gain at most, before anything runs."""

    names: list[str] = field(default_factory=list)  # the ops or tensors it was read from
    share: float | None = None  # of the step's time
    amdahl: float | None = None  # largest end-to-end speed-up if that phase took no time
    fusion_saved_bytes: int | None = None
    lines: list[str] = field(default_factory=list)


def _names(op: str, text: str) -> bool:
    """Does the (lower-case) text name this op: "aten::_softmax" is named by "softmax"."""
    bare = op.removeprefix("aten::").lstrip("_").lower()
    return op.lower() in text or re.search(rf"(?<![\w:]){re.escape(bare)}\b", text) is not None


def estimate(text: str, summary: Mapping[str, Any]) -> Estimate:
    """The Amdahl ceiling of the ops a hypothesis names (aten::exp, "exp", "the matmul"), and
    for a materialization hypothesis the bytes fusing the pairs it names would save."""
    out = Estimate()
    low = text.lower()
    ops = summary.get("ops_by_name") or []
    named = [r for r in ops if _names(r["name"], low)]
    if re.search(r"\bmatmul\b|\bgemm\b", low):
        named += [
            r
            for r in ops
            if r["name"] in ("aten::mm", "aten::addmm", "aten::bmm") and r not in named
        ]
    if named:
        share = sum(float(r.get("share") or 0.0) for r in named)
        out.names = [r["name"] for r in named]
        out.share = min(share, 1.0)
        out.amdahl = amdahl_ceiling(out.share)
        ceiling = "unbounded" if out.amdahl == float("inf") else f"{out.amdahl:.2f}x"
        out.lines.append(
            f"{', '.join(out.names)}: {out.share:.0%} of the operators' time per step; if it "
            f"took no time at all the step would be at most {ceiling} faster (Amdahl)"
        )
    if _WORDS["intermediate_bytes"].search(low) or "fus" in low:
        pairs = [
            p for p in summary.get("pairs") or []
            if not named or p["producer"] in out.names or p["consumer"] in out.names
        ]  # fmt: skip
        if pairs:
            out.fusion_saved_bytes = int(sum(int(p["saved_bytes"]) for p in pairs))
            shown = ", ".join(
                f"{p['producer']} → {p['consumer']} ({format_bytes(p['bytes'])})" for p in pairs[:4]
            )
            out.lines.append(
                f"fusing {shown} saves about {format_bytes(out.fusion_saved_bytes)} of traffic "
                "per step (each tensor written once and read back once: 2 x its bytes)"
            )
    return out
