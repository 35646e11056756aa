"""The gates of the method: conditions a step must meet, each refusal with its reason in words.

Every check returns the list of unmet conditions (empty: the gate opens); `require(...)`
turns a non-empty list into a `GateRefusal`. Nothing here writes. The `*_in` forms are
functions of one loaded `SessionView` and read nothing; the others read what they need from
the ledger and apply the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from session import check_words
from session import models as m
from session.errors import GateRefusal
from session.ledger_port import LedgerLike
from session.profile.base import newest_profiles
from session.timing import metric_legend
from session.verdicts import two_modes
from session.view import SessionView

__all__ = [
    "FLAG_FIELDS",
    "NEW_HYPOTHESIS",
    "GateRefusal",
    "VariantFacts",
    "baseline_warning",
    "check_disposition",
    "check_disposition_in",
    "check_one_factor",
    "check_round_allowed",
    "gradient_outputs",
    "in_form",
    "is_gradient_output",
    "latest_comparisons",
    "latest_comparisons_in",
    "latest_correctness",
    "latest_correctness_in",
    "open_preflight_questions",
    "own_inputs_refusals",
    "require",
    "round_refusal",
    "variant_facts",
    "variant_facts_in",
]


# The disposition gates name what is missing by its `gpuopt dispose` flag; the app names
# the same thing by its form field (`in_form`), so both read one text.
FLAG_FIELDS = {
    "--class": "optimization_class",
    "--accept-semantics": "accepted_semantics",
    "--guard": "guards",
    "--fallback": "fallback",
    "--reason": "reason",
    "--reopen-when": "reopen_when",
}
_FLAG = re.compile(r"\((--[a-z-]+)[^)]*\)")


def in_form(problem: str, labels: Mapping[str, str]) -> str:
    """A gate's words with each "(--flag …)" named as `labels` (by Disposition field) name
    it in a form instead ("write the guard conditions (the Guards field)"); a flag without
    a label is kept."""

    def swap(found: re.Match[str]) -> str:
        label = labels.get(FLAG_FIELDS.get(found.group(1), ""))
        return f"({label})" if label else found.group(0)

    return _FLAG.sub(swap, problem)


def fields_named(problems: Iterable[str], labels: Mapping[str, str]) -> list[str]:
    """The form fields (as `labels` name them, by Disposition field) that the gates' words
    ask for, each once, in order: "the Guards field", "the Fallback field"."""
    out: list[str] = []
    for problem in problems:
        for flag in _FLAG.findall(problem):
            label = labels.get(FLAG_FIELDS.get(flag, ""))
            if label and label not in out:
                out.append(label)
    return out


def require(reasons: Iterable[str]) -> None:
    """Raise a GateRefusal carrying every reason, if there is any."""
    found = [r for r in reasons if r]
    if found:
        raise GateRefusal(found)


# ---------------------------------------------------------------------------- round


def check_round_allowed(ledger: LedgerLike, session: m.Session) -> list[str]:
    """`round_refusal` of the session's latest baseline, as stored."""
    return round_refusal(session, ledger.latest_baseline(session.id))


def round_refusal(session: m.Session, baseline: m.Baseline | None) -> list[str]:
    """A round compares variants against a baseline: one never judged, with failing runs, or
    drifting for a cause the telemetry names blocks it; one drifting with no named cause, or
    too noisy for its band, does not (`baseline_warning` says what a round may do)."""
    from session import conduct  # lazy: the measuring engine, only for a recorded baseline

    if baseline is None:
        return ["no round before a baseline: record one first (gpuopt baseline)"]
    got = judged_outcome(baseline)
    if got is None:
        return [
            f"no round before a judged baseline: baseline {baseline.id} has not been judged "
            "yet; record it again"
        ]
    if got.blocks_round:
        delta = session.contract.threshold if baseline.threshold is None else baseline.threshold
        detail = f" ({baseline.reproducibility_detail})" if baseline.reproducibility_detail else ""
        return [
            f"no round on this baseline: baseline {baseline.id} is "
            f"{conduct.outcome_words(got, delta)}{detail}; {conduct.repair_words(got)}"
        ]
    return []


def judged_outcome(baseline: m.Baseline) -> m.Outcome | None:
    """The baseline's outcome as recorded, at its own band (None: never judged); reads
    nothing (`session.conduct.outcome` at the baseline's own threshold)."""
    return baseline.judged_outcome()


def baseline_warning(ledger: LedgerLike, session: m.Session, baseline: m.Baseline) -> str:
    """For a baseline too noisy for its band: what a round may do, with the band its noise
    supports (empty for any other baseline)."""
    from session import conduct  # lazy, as above

    got = conduct.outcome(ledger, session, baseline)
    if got is None or not got.warns:
        return ""
    delta = session.contract.threshold if baseline.threshold is None else baseline.threshold
    judged = conduct.judge_baseline(ledger, session, baseline, delta)
    if got is conduct.Outcome.TOO_FEW:
        few = "; ".join(j.words() for j in judged if j.outcome is got)
        return (
            f"baseline {baseline.id} has {conduct.outcome_words(got, delta)}: a round may go "
            f"on, but its noise is unknown" + (f" ({few})" if few else "")
        )
    if got is conduct.Outcome.DRIFTING:
        return (
            f"baseline {baseline.id} is {conduct.outcome_words(got, delta)}: no telemetry "
            "names a cause, so a round goes on, paired (its interleaved blocks cancel drift), "
            "and the record says the baseline's absolute figures are unreliable"
        )
    fit = conduct.supported_band(judged)
    at = f"--threshold {fit:.3g}" if fit is not None else "a wider --threshold"
    return (
        f"baseline {baseline.id} is {conduct.outcome_words(got, delta)}: a round may go on "
        f"at a band this noise supports ({at}), or quiet the machine and record it again"
    )


# ---------------------------------------------------------------------------- one factor


# The hypothesis a variant is about to test when it is not written yet (see below).
NEW_HYPOTHESIS = ""


def check_one_factor(variant: m.Variant, hypothesis_id: str | None) -> list[str]:
    """A variant tests one factor, so it belongs to at most one hypothesis. `hypothesis_id`
    None: no link asked for; NEW_HYPOTHESIS: one about to be written, checked first so a
    refusal leaves nothing behind."""
    if hypothesis_id is None or not variant.hypothesis_id:
        return []
    if variant.hypothesis_id == hypothesis_id:
        return []
    this = f"hypothesis {hypothesis_id}" if hypothesis_id else "this one"
    return [
        f"a variant is one factor: {variant.name} already tests hypothesis "
        f"{variant.hypothesis_id}; make a separate variant for {this}"
    ]


# ---------------------------------------------------------------------------- facts


def is_gradient_output(name: str) -> bool:
    """Whether an ErrorStats output names a gradient (grad, grad:x, x.grad, grad_input ...)."""
    return "grad" in name.lower()


def gradient_outputs(results: Iterable[m.CorrectnessResult]) -> list[str]:
    return sorted({s.output for r in results for s in r.stats if is_gradient_output(s.output)})


def latest_comparisons(
    ledger: LedgerLike, variant: m.Variant
) -> tuple[m.Round | None, list[m.Comparison]]:
    """The comparisons of the most recent round that measured this variant."""
    comps = ledger.list(m.Comparison, variant_id=variant.id)  # unreadable rows: noted, skipped
    # `list` by id, not `get`: a round row that does not read back is noted and skipped
    ids = tuple(dict.fromkeys(c.round_id for c in comps))
    return _latest_of(ledger.list(m.Round, id=ids) if ids else [], comps)


def latest_comparisons_in(
    view: SessionView, variant: m.Variant
) -> tuple[m.Round | None, list[m.Comparison]]:
    """`latest_comparisons` of the rows a view holds."""
    mine = [c for c in view.all_comparisons() if c.variant_id == variant.id]
    return _latest_of(view.rounds, mine)


def _latest_of(
    rounds: Iterable[m.Round], comps: list[m.Comparison]
) -> tuple[m.Round | None, list[m.Comparison]]:
    measured = {c.round_id for c in comps}
    found = [r for r in rounds if r.id in measured]
    if not found:
        return None, []
    rnd = max(found, key=lambda r: (r.number, r.started_at))
    return rnd, [c for c in comps if c.round_id == rnd.id]


def latest_correctness(ledger: LedgerLike, variant: m.Variant) -> list[m.CorrectnessResult]:
    """The newest correctness result of this variant for each workload."""
    rows = ledger.list(m.CorrectnessResult, variant_id=variant.id, order_by="created_at, rowid")
    return newest_per_workload(rows)


def latest_correctness_in(view: SessionView, variant: m.Variant) -> list[m.CorrectnessResult]:
    """`latest_correctness` of the rows a view holds."""
    return newest_per_workload(view.correctness_of(variant.id))


def newest_per_workload(rows: Iterable[m.CorrectnessResult]) -> list[m.CorrectnessResult]:
    """The newest of each workload's results (by time; of equal times, the later row)."""
    found: dict[str, m.CorrectnessResult] = {}
    for r in sorted(rows, key=lambda c: c.created_at):  # stable: equal times keep row order
        found[r.workload] = r
    return list(found.values())


def open_preflight_questions(ledger: LedgerLike, session: m.Session) -> list[str]:
    """Preflight questions still unknown (or never answered), by name."""
    answers = {p.question: p for p in ledger.list(m.PreflightAnswer, session_id=session.id)}
    out = []
    for q in m.PreflightQuestion:
        a = answers.get(q)
        if a is None or a.kind is m.PreflightAnswerKind.UNKNOWN:
            out.append(q.value)
    return out


@dataclass
class VariantFacts:
    """What the ledger knows about one variant, as the disposition gates read it."""

    variant: m.Variant
    round: m.Round | None
    comparisons: list[m.Comparison]
    correctness: list[m.CorrectnessResult]
    workloads: dict[str, m.Workload]
    # workload -> the roofline floor of the baseline's profile (session.check_words)
    floors: dict[str, check_words.Floor] = field(default_factory=dict)

    def scope_of(self, workload: str) -> m.WorkloadScope | None:
        w = self.workloads.get(workload)
        return w.scope if w else None


def variant_facts(ledger: LedgerLike, session: m.Session, variant: m.Variant) -> VariantFacts:
    rnd, comps = latest_comparisons(ledger, variant)
    return VariantFacts(
        variant=variant,
        round=rnd,
        comparisons=comps,
        correctness=latest_correctness(ledger, variant),
        workloads={w.name: w for w in session.contract.workloads},
        floors=check_words.floors_of(newest_profiles(_evidence(ledger, session), "baseline")),
    )


def _evidence(ledger: LedgerLike, session: m.Session) -> list[m.Evidence]:
    return ledger.list(m.Evidence, session_id=session.id, order_by="created_at, rowid")


def variant_facts_in(view: SessionView, variant: m.Variant) -> VariantFacts:
    """`variant_facts` of the rows a view holds."""
    rnd, comps = latest_comparisons_in(view, variant)
    return VariantFacts(
        variant=variant,
        round=rnd,
        comparisons=comps,
        correctness=latest_correctness_in(view, variant),
        workloads={w.name: w for w in view.session.contract.workloads},
        floors=check_words.floors_of(newest_profiles(view.evidence, "baseline")),
    )


# ---------------------------------------------------------------------------- disposition

_NEEDS_ERROR_STATS = {m.OptimizationClass.C2, m.OptimizationClass.C3, m.OptimizationClass.C4}
_NEEDS_ACCEPTANCE = {m.OptimizationClass.C3, m.OptimizationClass.C4}


def _blank(text: str | None) -> bool:
    return not text or not text.strip()


def _measured(facts: VariantFacts) -> list[str]:
    name = facts.variant.name
    out = []
    if not facts.comparisons:
        out.append(f"no disposition before {name} has a comparison: run a round that includes it")
    if not facts.correctness:
        out.append(
            f"no disposition before {name} has a correctness result: run the contract's check"
        )
    return out


def _correct(facts: VariantFacts) -> list[str]:
    failed = sorted(r.workload for r in facts.correctness if not r.passed)
    if failed:
        return [f"correctness failed on {', '.join(failed)}"]
    return []


def _faster(facts: VariantFacts, session: m.Session) -> list[str]:
    """FASTER on the target metric; on both scopes when the contract has both."""
    out = []
    slower = sorted(c.workload for c in facts.comparisons if c.verdict is m.Verdict.SLOWER)
    if slower:
        out.append(f"SLOWER on {', '.join(slower)}: a default must not cost the target metric")
    impossible = {
        c.workload: words
        for c in facts.comparisons
        if c.verdict is m.Verdict.FASTER
        and (words := check_words.floor_words(c.ratio, facts.floors.get(c.workload)))
    }
    out += [f"{w}: {words}" for w, words in sorted(impossible.items())]
    faster_scopes = {
        facts.scope_of(c.workload)
        for c in facts.comparisons
        if c.verdict is m.Verdict.FASTER and c.workload not in impossible
    }
    scopes = {w.scope for w in session.contract.workloads}
    metric = metric_legend(session.contract)
    if len(scopes) > 1:
        for scope, words in (
            (m.WorkloadScope.ISOLATED, "an isolated"),
            (m.WorkloadScope.END_TO_END, "an end-to-end"),
        ):
            if scope not in faster_scopes:
                out.append(f"not FASTER on {metric} on {words} workload")
    elif not faster_scopes:
        out.append(f"not FASTER on {metric} on any workload")
    return out


def _trusted(facts: VariantFacts) -> list[str]:
    bad = sorted(
        f"{c.workload} ({c.untrusted_runs})" for c in facts.comparisons if c.untrusted_runs
    )
    if bad:
        return [f"untrusted runs in the comparison: {', '.join(bad)}; re-run the round"]
    modes = [words for c in facts.comparisons if (words := two_modes(c, facts.round))]
    if modes:
        return modes
    if facts.round is not None and facts.round.baseline_reproduced is False:
        return [
            f"round {facts.round.number} did not reproduce the baseline: its verdicts are untrusted"
        ]
    return []


def _full_round(facts: VariantFacts) -> list[str]:
    """Verdicts looked at before the round's minimum of blocks are early: not enough to keep.

    The minimum guards against deciding on the first lucky blocks (each block re-tests);
    a round cut short by Ctrl+C or the time budget, or one still running, has not met it.
    """
    rnd = facts.round
    if rnd is None:
        return []
    if rnd.status is m.RoundStatus.RUNNING:
        return [f"round {rnd.number} is still running: wait for its verdicts"]
    if rnd.blocks < rnd.min_blocks:
        why = rnd.summary.get("stop_reason") or rnd.status.value
        return [
            f"round {rnd.number} stopped ({why}) after {rnd.blocks} of at least "
            f"{rnd.min_blocks} blocks: its verdicts are early; run a full round"
        ]
    return []


def _class_checks(facts: VariantFacts, d: m.Disposition) -> list[str]:
    out = []
    cls = d.optimization_class
    if cls is None:
        return ["state the optimization class (--class C1|C2|C3|C4|NA)"]
    if cls in _NEEDS_ERROR_STATS and not any(r.stats for r in facts.correctness):
        out.append(f"{cls.value} needs error statistics from the correctness check")
    if cls is m.OptimizationClass.C1:
        differs = sorted(
            f"{r.workload}:{s.output}"
            for r in facts.correctness
            for s in r.stats
            if not s.bit_identical
        )
        if differs:
            out.append(f"C1 claims bit-identical results, but {', '.join(differs)} differ")
    if cls in _NEEDS_ACCEPTANCE and not d.accepted_semantics:
        out.append(
            f"{cls.value} changes precision or semantics: accept it explicitly (--accept-semantics)"
        )
    return out


def _guarded(d: m.Disposition) -> list[str]:
    out = []
    if not [g for g in d.guards if g.strip()]:
        out.append("write the guard conditions (--guard)")
    if _blank(d.fallback):
        out.append("write the fallback (--fallback)")
    return out


def _gradients(facts: VariantFacts) -> list[str]:
    training = sorted(n for n, w in facts.workloads.items() if w.training)
    if not training:
        return []
    covered = {
        r.workload for r in facts.correctness if any(is_gradient_output(s.output) for s in r.stats)
    }
    missing = [n for n in training if n not in covered]
    if missing:
        return [f"a training path needs a gradient check: none recorded for {', '.join(missing)}"]
    return []


# A check's warning that the variant's KernelBench file brings its own inputs.
OWN_INPUTS = ("redefines get_inputs()", "redefines get_init_inputs()")


def own_inputs_refusals(correctness: Iterable[m.CorrectnessResult], d: m.Disposition) -> list[str]:
    """A variant whose file redefines get_inputs()/get_init_inputs() was timed and checked on
    the reference's, but what it would run on in production is its own: keeping it as the
    default needs a person's explicit acceptance, with the reason."""
    found = sorted(
        {r.workload for r in correctness for w in r.warnings if any(x in w for x in OWN_INPUTS)}
    )
    if not found or (d.accepted_semantics and not _blank(d.reason)):
        return []
    return [
        f"the variant's file redefines get_inputs() or get_init_inputs() on "
        f"{', '.join(found)}: it was measured on the reference's inputs only; accept that "
        "explicitly with its reason (--accept-semantics --reason)"
    ]


def check_disposition(ledger: LedgerLike, session: m.Session, d: m.Disposition) -> list[str]:
    """Every unmet condition for this disposition (empty: it may be recorded)."""
    variant = ledger.get(m.Variant, d.variant_id)
    if variant is None:
        return [f"no variant {d.variant_id}"]
    return disposition_problems(session, variant_facts(ledger, session, variant), d)


def check_disposition_in(view: SessionView, d: m.Disposition) -> list[str]:
    """`check_disposition` of the rows a view holds."""
    variant = view.variant(d.variant_id)
    if variant is None:
        return [f"no variant {d.variant_id}"]
    return disposition_problems(view.session, variant_facts_in(view, variant), d)


def disposition_problems(session: m.Session, facts: VariantFacts, d: m.Disposition) -> list[str]:
    """Every unmet condition for this disposition, of the facts known of its variant."""
    variant = facts.variant
    out = _measured(facts)
    choice = d.choice
    if choice is m.DispositionChoice.REJECT:
        if _blank(d.reason):
            out.append("a rejection needs its reason (--reason)")
        if _blank(d.reopen_when):
            out.append("a rejection needs a reopening condition (--reopen-when)")
        return out
    if choice is m.DispositionChoice.NEED_EVIDENCE:
        if _blank(d.reason):
            out.append("say which evidence is missing (--reason)")
        return out
    if out:  # without measurements the other checks would only repeat it
        return out
    if variant.probe:
        out.append(
            f"{variant.name} is a probe: it observes the mechanism and is never kept; "
            "make a change variant for production"
        )
    out += _correct(facts)
    out += _full_round(facts)
    out += _class_checks(facts, d)
    if choice is m.DispositionChoice.KEEP_DEFAULT:
        out += own_inputs_refusals(facts.correctness, d)
        out += _faster(facts, session)
        out += _guarded(d)
        out += _gradients(facts)
        out += _trusted(facts)
    elif choice is m.DispositionChoice.KEEP_GUARDED:
        if not any(c.verdict is m.Verdict.FASTER for c in facts.comparisons):
            out.append(f"not FASTER on {metric_legend(session.contract)} on any workload")
        out += _guarded(d)
        out += _gradients(facts)
        out += _trusted(facts)
    elif choice is m.DispositionChoice.KEEP_LOCAL and not any(
        c.verdict is m.Verdict.FASTER for c in facts.comparisons
    ):
        out.append("a local micro-optimization must be FASTER on at least one workload")
    return out
