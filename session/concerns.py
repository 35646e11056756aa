"""Concern areas: the fourteen kinds of expertise a GPU change can call for, and rules that
suggest them from what the ledger already records about a hypothesis.

A suggestion is only that: it is shown to the person and recorded on the hypothesis (its
`concern_areas` and a history entry saying which fact raised it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from session import models as m
from session.format import bytes_text
from session.ledger_port import LedgerLike

A = m.ConcernArea

DESCRIPTIONS: dict[m.ConcernArea, str] = {
    A.PERFORMANCE_EVIDENCE: "Baselines, profiles and counters that show where the time "
    "really goes and what limits it.",
    A.NUMERICAL_SAFETY: "Whether results stay inside the accepted numerical contract: "
    "precision, summation order, NaN/Inf, rounding, determinism.",
    A.FUSION_AND_LAYOUT: "Temporaries written and read straight back, layout conversions, "
    "and fusing neighbouring operations to cut memory traffic.",
    A.LIFETIME_AND_ALLOCATION: "How long buffers live, how they overlap at the peak, and "
    "the pools and workspaces that hold them.",
    A.VIRTUAL_MEMORY: "Whether a large allocation can succeed at all: fragmentation, page "
    "size, contiguity and remapping.",
    A.TIERING_AND_MIGRATION: "Where data resides (device, peer, host, storage) and when and "
    "how it moves between them.",
    A.STATE_REUSE: "When cached state is really the same, still valid, and worth keeping or "
    "dropping.",
    A.PERSISTENT_STATE: "State that outlives one call: its growth, updates, snapshots, "
    "rollback and cleanup.",
    A.MEMORY_SCHEDULING: "Ordering compute, allocation, transfers and frees around the "
    "critical path.",
    A.KERNEL_EXECUTION: "Inside the hot kernel: thread mapping, tiling, registers, shared "
    "memory, occupancy, synchronization, atomics.",
    A.COMPILER_AND_RUNTIME: "Code a compiler or framework generates or captures: graph "
    "breaks, recompilation, launch overhead, graphs, transfers.",
    A.REDUCTIONS_AND_SCANS: "Sums, scans, running statistics and chunked recurrences, with "
    "their boundary and rounding hazards.",
    A.TRAINING_PATH: "The backward pass: gradients, saved tensors, recomputation, and the "
    "memory and time of a training step.",
    A.VALIDATION: "Representative benchmarks, acceptance conditions, failure cases and the "
    "decision record of a change meant for production.",
}

LABELS: dict[m.ConcernArea, str] = {a: a.value.replace("_", " ") for a in m.ConcernArea}


@dataclass(frozen=True)
class Suggestion:
    area: m.ConcernArea
    reason: str


@dataclass
class Facts:
    """What is recorded about one hypothesis and its session, as the rules read it."""

    text: str = ""  # the hypothesis's own words, lower case
    training_workloads: list[str] = field(default_factory=list)
    classes: list[m.OptimizationClass] = field(default_factory=list)  # suggested by checks
    inexact_outputs: list[str] = field(default_factory=list)  # outputs not bit-identical
    peak_changes: list[str] = field(default_factory=list)  # "workload: a → b"
    launch_changes: list[str] = field(default_factory=list)
    kernel_names: list[str] = field(default_factory=list)  # from imported profiles
    handed_off: dict[m.ConcernArea, list[str]] = field(default_factory=dict)  # preflight
    bottleneck: m.BottleneckClass = m.BottleneckClass.UNKNOWN
    has_evidence: bool = False
    change_variants: list[str] = field(default_factory=list)  # non-probe variants testing it


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_TEXT_RULES: list[tuple[m.ConcernArea, re.Pattern[str], str]] = [
    (
        A.NUMERICAL_SAFETY,
        _words(
            r"reorder|re-?associat|accumulat|summation order|precision|fp16|bf16|bfloat|"
            r"half|tf32|fp8|int8|quantiz|fast.?math|approximat|determinis|atomic|\bnan\b|"
            r"\binf\b|rounding|denormal|underflow|overflow"
        ),
        "it changes floating-point evaluation (it mentions {m})",
    ),
    (
        A.TRAINING_PATH,
        _words(r"gradient|backward|autograd|\bgrads?\b|optimizer step|training step"),
        "it touches gradients (it mentions {m})",
    ),
    (
        A.LIFETIME_AND_ALLOCATION,
        _words(
            r"peak memory|peak bytes|allocation|allocator|workspace|memory pool|\bpool\b|"
            r"out of memory|\boom\b|live range|rematerializ|recompute"
        ),
        "it concerns buffer lifetime or allocation (it mentions {m})",
    ),
    (
        A.COMPILER_AND_RUNTIME,
        _words(
            r"torch\.compile|inductor|triton|\bxla\b|\bjit\b|cuda ?graph|graph break|"
            r"recompil|launch overhead|dynamo|tensorrt"
        ),
        "it relies on generated or captured code (it mentions {m})",
    ),
    (
        A.FUSION_AND_LAYOUT,
        _words(
            r"\bfus(e|ed|ion|ing)\b|intermediate|temporar|transpose|layout|contiguous|"
            r"elementwise|materializ|round trip"
        ),
        "it is about intermediate buffers or layout (it mentions {m})",
    ),
    (
        A.REDUCTIONS_AND_SCANS,
        _words(
            r"reduction|\breduce\b|softmax|\bscan\b|cumsum|prefix|layer ?norm|"
            r"\bnorm\b|variance|running (mean|stat)|online"
        ),
        "it involves a reduction or scan (it mentions {m})",
    ),
    (
        A.KERNEL_EXECUTION,
        _words(
            r"occupancy|register|shared memory|\btil(e|es|ing)\b|\bwarp|coalesc|"
            r"bank conflict|tensor core|wgmma|mma\b|block size|grid size"
        ),
        "it is about how the hot kernel executes (it mentions {m})",
    ),
    (
        A.VIRTUAL_MEMORY,
        _words(r"fragment|expandable.segments|\bvmm\b|virtual memory|page size|compaction"),
        "it is about allocatability (it mentions {m})",
    ),
    (
        A.TIERING_AND_MIGRATION,
        _words(
            r"offload|prefetch|pinned|host memory|unified memory|managed memory|migrat|"
            r"nvlink|\bpeer\b|swap"
        ),
        "it moves data between memory tiers (it mentions {m})",
    ),
    (
        A.STATE_REUSE,
        _words(r"\bcache|reuse|evict|invalidat|kv.?cache|memoi"),
        "it reuses retained state (it mentions {m})",
    ),
    (
        A.PERSISTENT_STATE,
        _words(r"checkpoint|snapshot|rollback|persistent|across calls|between calls|state grows"),
        "it concerns state kept across calls (it mentions {m})",
    ),
    (
        A.MEMORY_SCHEDULING,
        _words(r"overlap|\bstreams?\b|async(hronous)? copy|critical path|pipelin"),
        "it reorders compute and memory work (it mentions {m})",
    ),
]

_BOTTLENECK_RULES: dict[m.BottleneckClass, list[m.ConcernArea]] = {
    m.BottleneckClass.LAUNCH_BOUND: [A.COMPILER_AND_RUNTIME],
    m.BottleneckClass.HOST_BOUND: [A.COMPILER_AND_RUNTIME],
    m.BottleneckClass.BANDWIDTH_BOUND: [A.FUSION_AND_LAYOUT],
    m.BottleneckClass.COMPUTE_BOUND: [A.KERNEL_EXECUTION],
    m.BottleneckClass.LATENCY_BOUND: [A.KERNEL_EXECUTION],
    m.BottleneckClass.CAPACITY_BOUND: [A.LIFETIME_AND_ALLOCATION],
}

_GENERATED_KERNEL = re.compile(r"^triton_|inductor|cutlass|xla|fused_|nvjet|^cudagraph", re.I)


def _fact_rules() -> list[Callable[[Facts], list[Suggestion]]]:
    def numerics(f: Facts) -> list[Suggestion]:
        risky = [
            c.value
            for c in f.classes
            if c in (m.OptimizationClass.C2, m.OptimizationClass.C3, m.OptimizationClass.C4)
        ]
        if risky:
            return [
                Suggestion(
                    A.NUMERICAL_SAFETY,
                    f"a correctness check suggested class {', '.join(sorted(set(risky)))}",
                )
            ]
        if f.inexact_outputs:
            return [
                Suggestion(
                    A.NUMERICAL_SAFETY,
                    "outputs differ from the reference bit for bit ("
                    + ", ".join(f.inexact_outputs[:3])
                    + ")",
                )
            ]
        return []

    def training(f: Facts) -> list[Suggestion]:
        if f.training_workloads:
            return [
                Suggestion(
                    A.TRAINING_PATH,
                    f"the contract marks a training path ({', '.join(f.training_workloads)})",
                )
            ]
        return []

    def peak(f: Facts) -> list[Suggestion]:
        if f.peak_changes:
            return [
                Suggestion(
                    A.LIFETIME_AND_ALLOCATION,
                    f"peak memory changed ({'; '.join(f.peak_changes[:3])})",
                )
            ]
        return []

    def launches(f: Facts) -> list[Suggestion]:
        out = []
        if f.launch_changes:
            out.append(
                Suggestion(
                    A.FUSION_AND_LAYOUT,
                    f"kernel launches changed ({'; '.join(f.launch_changes[:3])})",
                )
            )
        generated = [k for k in f.kernel_names if _GENERATED_KERNEL.search(k)]
        if generated:
            out.append(
                Suggestion(
                    A.COMPILER_AND_RUNTIME,
                    f"a compiler-generated kernel in the profile ({generated[0][:60]})",
                )
            )
        return out

    def handoffs(f: Facts) -> list[Suggestion]:
        return [
            Suggestion(area, f"the preflight handed {', '.join(qs)} to it")
            for area, qs in f.handed_off.items()
        ]

    def bottleneck(f: Facts) -> list[Suggestion]:
        return [
            Suggestion(area, f"the bottleneck is classified {f.bottleneck.value}")
            for area in _BOTTLENECK_RULES.get(f.bottleneck, [])
        ]

    def evidence(f: Facts) -> list[Suggestion]:
        if not f.has_evidence and f.bottleneck is m.BottleneckClass.UNKNOWN:
            return [
                Suggestion(
                    A.PERFORMANCE_EVIDENCE,
                    "no profile or measurement supports it yet and the bottleneck is unclassified",
                )
            ]
        return []

    def validation(f: Facts) -> list[Suggestion]:
        if f.change_variants:
            return [
                Suggestion(
                    A.VALIDATION,
                    f"a variant changes production behaviour ({', '.join(f.change_variants)})",
                )
            ]
        return []

    return [numerics, training, peak, launches, handoffs, bottleneck, evidence, validation]


def suggest(facts: Facts) -> list[Suggestion]:
    """Every concern area the facts call for, once each, with the first reason found."""
    found: dict[m.ConcernArea, Suggestion] = {}
    for area, pattern, template in _TEXT_RULES:
        match = pattern.search(facts.text)
        if match and area not in found:
            found[area] = Suggestion(area, template.format(m=repr(match.group(0))))
    for rule in _fact_rules():
        for s in rule(facts):
            found.setdefault(s.area, s)
    return [found[a] for a in m.ConcernArea if a in found]


def _audit_changes(
    ledger: LedgerLike, session_id: str, variant_ids: list[str]
) -> tuple[list[str], list[str]]:
    audits = ledger.list(m.Audit, session_id=session_id)
    base = {a.workload: a for a in audits if a.arm == "baseline"}
    peaks, launches = [], []
    for a in audits:
        if a.arm not in variant_ids or a.workload not in base:
            continue
        b = base[a.workload]
        if a.peak_bytes is not None and b.peak_bytes is not None and a.peak_bytes != b.peak_bytes:
            peaks.append(f"{a.workload}: {bytes_text(b.peak_bytes)} → {bytes_text(a.peak_bytes)}")
        if (
            a.kernel_launches is not None
            and b.kernel_launches is not None
            and a.kernel_launches != b.kernel_launches
        ):
            launches.append(f"{a.workload}: {b.kernel_launches} → {a.kernel_launches}")
    return peaks, launches


def gather_facts(ledger: LedgerLike, session: m.Session, h: m.Hypothesis) -> Facts:
    """Read what the ledger records about a hypothesis into Facts."""
    variants = [v for v in ledger.list(m.Variant, session_id=session.id) if v.hypothesis_id == h.id]
    vids = [v.id for v in variants]
    results = [r for vid in vids for r in ledger.list(m.CorrectnessResult, variant_id=vid)]
    evidence = [
        e
        for e in ledger.list(m.Evidence, session_id=session.id)
        if e.hypothesis_id == h.id or (e.variant_id and e.variant_id in vids)
    ]
    kernels: list[str] = []
    for e in evidence:
        for k in e.summary.get("top_kernels", []) or []:
            if isinstance(k, dict) and k.get("name"):
                kernels.append(str(k["name"]))
    handed: dict[m.ConcernArea, list[str]] = {}
    for p in ledger.list(m.PreflightAnswer, session_id=session.id):
        if p.kind is m.PreflightAnswerKind.HANDED_OFF and p.concern_area:
            handed.setdefault(p.concern_area, []).append(p.question.value)
    peaks, launches = _audit_changes(ledger, session.id, vids)
    fresh = ledger.get(m.Session, session.id) or session
    text = " ".join(
        [
            h.title,
            h.symptom,
            h.mechanism,
            h.preconditions,
            h.predicted_effect,
            h.predicted_evidence,
            h.falsifier,
            h.confounders,
        ]
    )
    return Facts(
        text=text.lower(),
        training_workloads=[w.name for w in session.contract.workloads if w.training],
        classes=[r.suggested_class for r in results if r.suggested_class],
        inexact_outputs=[
            f"{r.workload}:{s.output}" for r in results for s in r.stats if not s.bit_identical
        ],
        peak_changes=peaks,
        launch_changes=launches,
        kernel_names=kernels,
        handed_off=handed,
        bottleneck=fresh.bottleneck,
        has_evidence=bool(evidence),
        change_variants=[v.name for v in variants if not v.probe],
    )


def suggest_for(ledger: LedgerLike, session: m.Session, h: m.Hypothesis) -> list[Suggestion]:
    return suggest(gather_facts(ledger, session, h))


def record_suggestions(
    ledger: LedgerLike, session: m.Session, h: m.Hypothesis
) -> tuple[m.Hypothesis, list[Suggestion]]:
    """Add newly suggested areas to the hypothesis, with a history entry naming the facts.

    Returns the hypothesis and every current suggestion (new or already recorded). Read
    and written in one transaction: another writer's edit between them is never undone."""
    with ledger.write():
        return _record_suggestions(ledger, session, ledger.get(m.Hypothesis, h.id) or h)


def _record_suggestions(
    ledger: LedgerLike, session: m.Session, fresh: m.Hypothesis
) -> tuple[m.Hypothesis, list[Suggestion]]:
    suggestions = suggest_for(ledger, session, fresh)
    new = [s for s in suggestions if s.area not in fresh.concern_areas]
    if not new:
        return fresh, suggestions
    before = list(fresh.concern_areas)
    fresh.concern_areas = [*before, *(s.area for s in new)]
    why = (
        "concern areas suggested from the facts ("
        + "; ".join(f"{LABELS[s.area]}: {s.reason}" for s in new)
        + ")"
    )
    event = m.HypothesisEvent(
        hypothesis_id=fresh.id,
        field="edited",
        from_value=", ".join(a.value for a in before),
        to_value=", ".join(a.value for a in fresh.concern_areas),
        why=why,
    )
    ledger.put(fresh, event)
    return fresh, suggestions
