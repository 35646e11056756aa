"""A stored profile in words and tables: one place for the command line, the app's profile
screen and the decision record's markdown (`profile_markdown`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from measure.numerics import format_bytes
from measure.profiling.roofline import si
from session.md import md_table

OP_HEAD = ("operator", "calls", "self time", "share", "input shapes")
TENSOR_HEAD = ("bytes", "shape", "dtype", "made by", "read by", "alive", "kind")
PAIR_HEAD = ("written by", "read by", "bytes", "a fusion saves")
SHARED_HEAD = ("written by", "read by (all)", "bytes", "fusing them all saves")
# Step times whose slowest is this many times the fastest: the machine was busy (or the step
# varies), and every time in the profile is rough.
SPREAD_WARN = 3.0
_KIND_WORDS = {
    "intermediate": "intermediate",
    "temporary": "scratch inside one op",
    "output": "output (alive at the end)",
}


def _us(x: Any) -> str:
    if not isinstance(x, (int, float)):
        return "—"
    return f"{x / 1e3:.3g} ms" if x >= 1000 else f"{x:.3g} µs"


def _pct(x: Any) -> str:
    return f"{x * 100:.1f}%" if isinstance(x, (int, float)) else "—"


def _si(x: Any, unit: str) -> str:
    return si(x, unit) if isinstance(x, (int, float)) else "—"


def _shape(s: Any) -> str:
    return (
        "×".join(str(d) for d in s) if isinstance(s, list) and s else ("scalar" if s == [] else "—")
    )


def op_rows(summary: Mapping[str, Any], limit: int = 10) -> list[tuple[str, ...]]:
    """The operator table (or, on a GPU, the kernel table) as text cells."""
    rows = summary.get("kernels") or summary.get("operators") or []
    out: list[tuple[str, ...]] = []
    for r in rows[:limit]:
        shapes = r.get("input_shapes") or []
        out.append(
            (
                str(r.get("name")),
                f"{r.get('calls')}",
                _us(r.get("self_us")),
                _pct(r.get("share")),
                ", ".join(_shape(s) for s in shapes if s) or "—",
            )
        )
    return out


def tensor_rows(summary: Mapping[str, Any], limit: int = 10) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for r in (summary.get("intermediates") or [])[:limit]:
        out.append(
            (
                format_bytes(r.get("bytes") or 0),
                _shape(r.get("shape")),
                str(r.get("dtype") or "—"),
                str(r.get("producer")),
                ", ".join(r.get("consumers") or []) or "—",
                _us(r.get("alive_us")),
                _KIND_WORDS.get(str(r.get("kind")), str(r.get("kind"))),
            )
        )
    return out


def pair_rows(summary: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Every pair the profile kept: the count said (`pair_count`) and the rows listed are
    one list (a count of 6 over a table of 5 was two)."""
    return [
        (p["producer"], p["consumer"], format_bytes(p["bytes"]), format_bytes(p["saved_bytes"]))
        for p in (summary.get("pairs") or [])
    ]


def shared_rows(summary: Mapping[str, Any], limit: int = 10) -> list[tuple[str, ...]]:
    """Intermediates several ops read: the producer, its readers, and what fusing them saves."""
    return [
        (
            str(r["producer"]),
            ", ".join(r.get("consumers") or []),
            format_bytes(r["bytes"]),
            format_bytes(r["saved_bytes"]),
        )
        for r in (summary.get("shared_intermediates") or [])[:limit]
    ]


ROUGH_TIMES = 2.0  # a profiled step this many times off the round's figure is rough


def _step_lines(summary: Mapping[str, Any]) -> list[str]:
    """The time per step, said as what it is (timed apart from the profiled steps), and a
    warning when the timed steps spread widely."""
    step_ms = summary.get("step_ms")
    if not isinstance(step_ms, (int, float)):
        return []
    samples = [t for t in summary.get("step_ms_samples") or [] if isinstance(t, (int, float))]
    timed = len(samples) or 5
    out = [
        f"time per step {step_ms:.4g} ms: the fastest of {timed} steps timed before the "
        "profiled ones (profiling distorts time; not the timing's figure)"
    ]
    figure = summary.get("round_ms")
    if isinstance(figure, (int, float)) and figure > 0:
        times = step_ms / figure
        if times >= ROUGH_TIMES or times <= 1 / ROUGH_TIMES:
            out.append(
                f"rough: the step took {times:.3g}× the round's figure ({figure:.4g} ms per "
                "call): the machine was busy while profiling, or the profiled step is not "
                "the timed one; times here are rough"
            )
    low, high = (min(samples), max(samples)) if samples else (0.0, 0.0)
    if low > 0 and high / low >= SPREAD_WARN:
        out.append(
            f"warning: the timed steps ranged from {low:.3g} to {high:.3g} ms (max/min "
            f"{high / low:.3g}×): the machine was busy or the step varies; times here are rough"
        )
    return out


def _boundary_line(summary: Mapping[str, Any]) -> str:
    bound = summary.get("most_frequent_boundary")
    # A profile stored before the worker chose only boundaries worth naming may hold one
    # nothing crosses, or one seen once: that is no "most frequent" boundary either.
    if not bound or not bound.get("bytes") or int(bound.get("count") or 0) < 2:
        return (
            "most frequent operator boundary: none (no boundary seen more than once with "
            "bytes across it)"
        )
    return (
        f"most frequent operator boundary {bound['from']} → {bound['to']} "
        f"({bound['count']}×, {format_bytes(bound['bytes'])} across it)"
    )


def fact_lines(summary: Mapping[str, Any]) -> list[str]:
    """The method's quick checklist, answered from one profile."""
    out = [
        f"device {summary.get('device')}"
        + (f" ({summary['device_name']})" if summary.get("device_name") else "")
        + f", dtype {summary.get('dtype') or '—'}, "
        f"{summary.get('profiled_steps', 1)} step(s) profiled",
        *_step_lines(summary),
        f"launches {'per step' if summary.get('per_step', True) else 'in the whole run'} "
        f"{summary.get('launches')} ({summary.get('launch_source')})",
    ]
    head = summary.get("dominant")
    if head:
        out.append(f"dominant operation {head['name']}: {_pct(head.get('share'))} of the time")
    if "most_frequent_boundary" in summary:  # a torch profile (Nsight's have no op order)
        out.append(_boundary_line(summary))
    largest = summary.get("largest_intermediate")
    if largest:
        out.append(
            f"largest intermediate {format_bytes(largest['bytes'])} {_shape(largest.get('shape'))} "
            f"{largest.get('dtype') or ''} from {largest['producer']}, read by "
            f"{', '.join(largest.get('consumers') or []) or 'nothing'}"
        )
    peak = summary.get("live_peak") or {}
    if peak:
        names = ", ".join(
            f"{format_bytes(t['bytes'])} from {t['producer']}" for t in peak.get("tensors", [])[:4]
        )
        out.append(
            f"peak of live bytes {format_bytes(peak.get('bytes') or 0)}: "
            f"{peak.get('tensor_count', 0)} tensor(s) overlap ({names or 'none'})"
        )
    pairs = summary.get("pairs") or []
    if pairs:
        saved = sum(int(p["saved_bytes"]) for p in pairs)
        count = int(summary.get("pair_count") or len(pairs))
        listed = f" (the {len(pairs)} largest are listed)" if count > len(pairs) else ""
        out.append(
            f"{count} write/read pair(s){listed}; fusing "
            f"{'the listed ones' if listed else 'them all'} would save about "
            f"{format_bytes(saved)} per step"
        )
    shared = summary.get("shared_intermediates") or []
    if shared:
        saved = sum(int(r["saved_bytes"]) for r in shared)
        out.append(
            f"{len(shared)} intermediate(s) read by several ops (no write/read pair); fusing "
            f"each producer with all its readers would save about {format_bytes(saved)} per step"
        )
    dyn = summary.get("dynamo")
    if dyn:
        out.append(
            f"torch.compile: {dyn['graph_breaks']} graph break(s), {dyn['recompiles']} "
            f"recompilation(s), {dyn['unique_graphs']} graph(s); the launches above are what ran"
        )
    return out


def roofline_lines(summary: Mapping[str, Any]) -> list[str]:
    work = summary.get("work") or {}
    pos = summary.get("roofline") or {}
    ai = pos.get("intensity")
    if not work.get("flops") and not work.get("bytes"):
        out = ["work: no work measured (no FLOPs counted and no bytes moved per step)"]
    else:
        out = [
            f"work {_si(work.get('flops'), 'FLOP')} and at least "
            f"{format_bytes(work.get('bytes') or 0)} moved per step: intensity "
            + (f"{ai:.3g} FLOP/byte" if isinstance(ai, (int, float)) else "— (no bytes moved)")
        ]
    ceil = pos.get("ceilings") or {}
    if ceil:
        out.append(
            f"ceilings {_si(ceil.get('flops'), 'FLOP/s')}, {_si(ceil.get('bandwidth'), 'B/s')}"
            + (f", {ceil['launch_s'] * 1e6:.3g} µs a launch" if ceil.get("launch_s") else "")
            + f" — {ceil.get('source')}"
        )
    vendor = pos.get("vendor")
    if vendor:
        out.append(
            f"of the vendor peak ({vendor['source']}): {_pct(vendor.get('bandwidth_fraction'))} "
            f"of the bandwidth, {_pct(vendor.get('flops_fraction'))} of the FLOP/s"
        )
    if pos.get("suggested"):
        out.append(
            f"suggested class: {pos['suggested']}"
            + (" (borderline)" if pos.get("borderline") else "")
            + " — a suggestion to confirm, not a finding"
        )
    out += [f"  {r}" for r in pos.get("reasons") or []]
    return out


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return md_table(list(head), [list(r) for r in rows])


def profile_markdown(
    profiles: Sequence[tuple[str, Mapping[str, Any]]],
    checks: Sequence[tuple[str, Sequence[str]]] = (),
    picture: str | None = None,
) -> list[str]:
    """The record's profile section: per (label, summary) its facts, operator, tensor and pair
    tables and roofline numbers; then, per variant, predicted against observed mechanism
    evidence (label, lines); `picture` is a roofline PNG beside the record, when one was made."""
    if not profiles:
        return []
    out = ["## Profiles", ""]
    for label, s in profiles:
        out += [f"### {label}: {s.get('workload', '')}", ""]
        out += [f"- {line}" for line in fact_lines(s)]
        out += [f"- {line.strip()}" for line in roofline_lines(s)]
        out.append("")
        ops = op_rows(s)
        if ops:
            out += [*_md_table(OP_HEAD, ops), ""]
        tensors = tensor_rows(s)
        if tensors:
            out += [*_md_table(TENSOR_HEAD, tensors), ""]
        pairs = pair_rows(s)
        if pairs:
            out += [*_md_table(PAIR_HEAD, pairs), ""]
        shared = shared_rows(s)
        if shared:
            out += [*_md_table(SHARED_HEAD, shared), ""]
        if s.get("trace"):
            out += [f"Trace: `{s['trace']}` (open it in ui.perfetto.dev or chrome://tracing)", ""]
    if picture:
        out += [f"![roofline]({picture})", ""]
    if checks:
        out += ["### Mechanism: predicted against observed", ""]
        for label, lines in checks:
            out.append(f"- {label}")
            out += [f"  - {line}" for line in lines]
        out.append("")
    return out


def roofline_series(
    profiles: Sequence[tuple[str, Mapping[str, Any]]],
) -> tuple[dict[str, float] | None, list[tuple[str, float, float]]]:
    """The ceilings (bandwidth, FLOP/s of the first profile that has them) and one point per
    profile: (label, intensity in FLOP/byte, achieved FLOP/s), for a log-log roofline."""
    roof: dict[str, float] | None = None
    points: list[tuple[str, float, float]] = []
    for label, s in profiles:
        pos = s.get("roofline") or {}
        ceil = pos.get("ceilings") or {}
        if roof is None and ceil.get("bandwidth") and ceil.get("flops"):
            roof = {"bandwidth": float(ceil["bandwidth"]), "flops": float(ceil["flops"])}
        ai, achieved = pos.get("intensity"), pos.get("achieved_flops")
        ai = float(ai) if isinstance(ai, (int, float)) else 0.0
        achieved = float(achieved) if isinstance(achieved, (int, float)) else 0.0
        if ai > 0 and achieved > 0:  # a log scale has no place for zero (or a missing figure)
            points.append((label, ai, achieved))
    return roof, points
