"""The demo's session, as a person would conduct it: its hypotheses (one per idea), the
variant each branch tests, the round's band, the decisions, and what to say when the flow
decided nothing. The rules live here, by the method; tui/demo only renders and starts it.

`run_flow` runs baseline, hypotheses, variants, round, residuals and dispositions through
the same engine and method calls as the app and the CLI, reporting each step through `say`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from session import conduct
from session import models as m
from session.conduct.common import band
from session.dispositions import dispose
from session.gates import GateRefusal
from session.hypotheses import add_hypothesis
from session.md import fixed
from session.read_model import confirm_residual, load_view, residual_suggestion
from session.verdicts import ci_heading, verdict_for

HYPOTHESES: list[dict[str, Any]] = [
    {
        "title": "One fused softmax call instead of four passes",
        "symptom": "the row is read and written by max, subtract, exp, sum and divide in turn",
        "mechanism": "each elementwise or reduction pass re-reads the row "
        "and launches its own operator",
        "predicted_effect": "at least 20% less time per call",
        "predicted_direction": m.Direction.LOWER,
        "predicted_evidence": "fewer operators per call in the audit",
        "falsifier": "the operator count drops but the time does not",
        "confidence": m.Confidence.HIGH,
    },
    {
        "title": "Skip the max subtraction",
        "symptom": "a whole reduction pass only to shift the logits",
        "mechanism": "without the shift one reduction and one subtraction disappear",
        "predicted_effect": "about 10% less time per call",
        "predicted_direction": m.Direction.LOWER,
        "predicted_evidence": "two operators fewer per call",
        "falsifier": "non-finite outputs for large logits",
        "confidence": m.Confidence.LOW,
    },
    {
        "title": "A contiguous copy first changes nothing (control)",
        "symptom": "none: a control for the measurement itself",
        "mechanism": "the input is already contiguous, so contiguous() returns it unchanged",
        "predicted_effect": "no change beyond noise",
        "predicted_evidence": "the same operators, plus one no-op call",
        "falsifier": "a verdict other than SAME",
        "confidence": m.Confidence.MEDIUM,
    },
]
# (variant name, git ref, the index of the hypothesis it tests): one idea each
VARIANTS = [("fused", "fused", 0), ("no-max", "no-max", 1), ("same", "same", 2)]


Say = Callable[[str], None]


def run_flow(
    ledger: Any,
    session: m.Session,
    *,
    runs: int = conduct.DEFAULT_RUNS,
    max_runs: int | None = None,
    min_blocks: int | None = None,
    max_blocks: int | None = None,
    seed: int = 1,
    say: Say = print,
    progress: Callable[[Any], None] | None = None,
    monitor: Any = None,
    stop: Any = None,
) -> dict[str, Any]:
    """Baseline → hypotheses → variants → round → residuals → dispositions, by the same
    rules and defaults as `gpuopt baseline` and `gpuopt round` (blocks: the round's own
    defaults where None). Returns what happened (ids and verdicts); the ledger holds the
    rest. A baseline too noisy for the contract's band goes on at the band it supports; one
    that blocks a round ends the flow with what to repair. `stop` (an Event) ends the flow
    after the current run, as Ctrl+C, SIGTERM or SIGHUP do for `gpuopt baseline`: what was
    measured is kept, marked interrupted, and nothing after it starts."""
    say("Recording the baseline…")

    def stopped() -> bool:
        return stop is not None and stop.is_set()

    baseline = conduct.record_baseline(
        ledger,
        session,
        runs=runs,
        max_runs=max_runs,
        warmup=1,
        progress=progress,
        monitor=monitor,
        stop=stop,
    )
    say(f"  baseline {baseline.id}: {baseline.reproducibility_detail}")
    if stopped():
        say("Stopped: the baseline so far is kept, marked interrupted.")
        return {"baseline": baseline.id, "interrupted": True}
    o = conduct.outcome(ledger, session, baseline)
    if not ((o is not None and not o.blocks_round) or stopped()):
        repair = conduct.repair_words(o) if o else "record it again"
        say(f"  no round on this baseline: {repair}")
        why = f"the baseline {baseline.id} blocks a round ({baseline.reproducibility_detail})"
        return {"baseline": baseline.id, "blocked": True, "why": why, "repair": repair}
    threshold = round_band(ledger, session, baseline, o, say)
    say("Writing the hypotheses…")
    hyps = []
    for fields in HYPOTHESES:
        h, similar = add_hypothesis(ledger, session, **fields)
        hyps.append(h)
        say(
            f"  {h.id} {h.title}"
            + (f" ({len(similar)} similar rejected before)" if similar else "")
        )
    say("Adding the variants…")
    variants = []
    for name, ref, hi in VARIANTS:
        v = conduct.add_variant(ledger, session, name, ref=ref, hypothesis_id=hyps[hi].id)
        variants.append(v)
        say(f"  {v.name} ← {ref} ({v.snapshot.commit[:10]})")
    say("Running the round…")
    blocks: dict[str, Any] = {"min_blocks": min_blocks, "max_blocks": max_blocks}
    blocks = {k: v for k, v in blocks.items() if v is not None}  # else the round's defaults
    rnd = conduct.run_round(
        ledger,
        session,
        **blocks,
        threshold=threshold,
        seed=seed,
        progress=progress,
        monitor=monitor,
        stop=stop,
    )
    if stopped():
        say(f"Stopped: round {rnd.number} so far is kept, marked interrupted.")
        return {"baseline": baseline.id, "round": rnd.id, "interrupted": True}
    view = load_view(ledger, session.id)
    verdicts: dict[str, str] = {}
    for c in view.comparisons.get(rnd.id, []):
        name = view.variant_name(c.variant_id)
        shown = verdict_for(view, c)  # a failed check reads BROKEN, never FASTER
        verdicts[name] = shown.word
        say(
            f"  {name:<7} ratio {fixed(c.ratio)} [{fixed(c.ci_low)}, {fixed(c.ci_high)}] "
            f"({ci_heading([c])}) {shown.text}"
        )
    for cr in view.correctness:
        say(f"  check {view.variant_name(cr.variant_id):<7} {'pass' if cr.passed else 'FAIL'}")
    say("Confirming residuals and deciding…")
    decisions: dict[str, str] = {}
    for v in variants:
        sug = residual_suggestion(ledger, view, v)
        if sug is not None:
            confirm_residual(ledger, view, v, sug[0], "confirmed by the demo")
        decisions[v.name] = decide(ledger, view, v, say, verdicts.get(v.name, ""))
    return {"baseline": baseline.id, "round": rnd.id, "verdicts": verdicts, "decisions": decisions}


DECIDED = {c.value for c in m.DispositionChoice if c is not m.DispositionChoice.NEED_EVIDENCE}


def undecided(outcome: dict[str, Any]) -> str | None:
    """Why a finished demo decided nothing, and what to do, in one sentence; None when it
    kept or rejected at least one variant on a round that resolved something (an
    interrupted flow is said as such by its caller). A demo that decided nothing has
    failed at its one job: showing a decision."""
    if outcome.get("interrupted"):
        return None
    if outcome.get("blocked"):
        return (
            f"{outcome.get('why', 'the baseline blocks a round')}, so no variant was "
            f"measured: {outcome.get('repair', 'record it again')}; then run the demo again "
            "(on a busy machine, with more runs: --runs 20 --max-runs 80)"
        )
    verdicts = outcome.get("verdicts", {})
    decided = [n for n, d in outcome.get("decisions", {}).items() if d in DECIDED]
    if not decided or all(v == m.Verdict.INCONCLUSIVE.value for v in verdicts.values()):
        return (
            "the round resolved no variant (every verdict INCONCLUSIVE or every decision "
            "waits for evidence): the machine is too noisy for the band; run the demo again "
            "when it is quieter, or with a longer round (--max-blocks 60)"
        )
    return None


def round_band(
    ledger: Any, session: m.Session, baseline: m.Baseline, o: Any, say: Say
) -> float | None:
    """The round's band: the contract's, or for a baseline too noisy for it the narrowest
    band its runs support (what `gpuopt round --threshold` would be told to use); None for
    the contract's."""
    if not o.warns:
        return None
    delta = session.contract.threshold if baseline.threshold is None else baseline.threshold
    wider = conduct.supported_band(conduct.judge_baseline(ledger, session, baseline, delta))
    if wider is None or wider <= session.contract.threshold:
        say("  going on at the contract's band: expect INCONCLUSIVE verdicts")
        return None
    say(f"  going on at {band(wider)}, the band this baseline's noise supports")
    return wider


def decide(ledger: Any, view: Any, v: m.Variant, say: Say, verdict: str = "") -> str:
    """The demo's decisions, falling back to 'need more evidence' where a gate refuses.
    `verdict`: the round's shown verdict of the variant (a control's reason says it)."""

    checks = view.correctness_of(v.id)
    passed = bool(checks) and all(c.passed for c in checks)
    cls = (
        next((c.suggested_class for c in checks if c.suggested_class), None)
        or m.OptimizationClass.C2
    )
    attempts: list[tuple[m.DispositionChoice, dict[str, Any]]] = []
    if v.name == "fused" and passed:
        attempts.append(
            (
                m.DispositionChoice.KEEP_DEFAULT,
                {
                    "optimization_class": cls,
                    "guards": ["float32 inputs; the last dimension is the one reduced"],
                    "fallback": "revert to the four-pass softmax",
                    "reason": "faster, and within the tolerance of a float32 softmax",
                    "remaining_bottlenecks": ["process start-up dominates the end-to-end time"],
                },
            )
        )
    if not passed:
        attempts.append(
            (
                m.DispositionChoice.REJECT,
                {
                    "reason": "non-finite outputs for large logits: the check fails",
                    "reopen_when": "the logits are known to be bounded well below 88",
                    "failure_cases": ["any row with a logit above about 88 (float32 exp overflow)"],
                },
            )
        )
    if v.name == "same":
        attempts.append(
            (
                m.DispositionChoice.REJECT,
                {
                    "reason": "a control: it should not and did not change the time"
                    if verdict == m.Verdict.SAME.value
                    else f"a control: it should not change the time; it read {verdict or '—'}",
                    "reopen_when": "never; it exists to show the noise band",
                },
            )
        )
    attempts.append(
        (
            m.DispositionChoice.NEED_EVIDENCE,
            {
                "reason": "the round did not decide it",
                "reopen_when": "a longer round on a quiet machine",
            },
        )
    )
    refusals = []
    for choice, fields in attempts:
        try:
            d = dispose(ledger, view.session, v, choice, **fields)
        except GateRefusal as exc:
            refusals.append(f"{choice.value}: {exc.reason}")
            continue
        say(
            f"  {v.name:<7} {d.choice.value}"
            + (f"   (refused first: {'; '.join(refusals)})" if refusals else "")
        )
        return d.choice.value
    say(f"  {v.name:<7} undecided: {'; '.join(refusals)}")
    return "undecided"
