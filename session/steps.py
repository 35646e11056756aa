"""The eight steps of a session and the state of each, computed from its rows alone.

A step is not started, in progress, done, or blocked (with the reason). Nothing is stored:
the states are a function of one loaded view (`step_states_of`), so the command line and
the TUI always agree, and a view built by hand tests them without a ledger.
"""

from __future__ import annotations

import shlex
from typing import Any

from session import models as m
from session.gates import (
    baseline_warning,
    judged_outcome,
    latest_comparisons_in,
    latest_correctness_in,
    round_refusal,
)
from session.hypotheses import missing_fields
from session.timing import metric_legend
from session.verdicts import round_untrusted, shown_verdict
from session.view import SessionView, load_rows

S = m.StepState

LABELS: dict[m.StepName, str] = {
    m.StepName.CONTRACT: "Contract",
    m.StepName.BASELINE: "Baseline",
    m.StepName.PREFLIGHT: "Preflight",
    m.StepName.HYPOTHESES: "Hypotheses",
    m.StepName.ROUND: "Round",
    m.StepName.RESULTS: "Results",
    m.StepName.DISPOSITION: "Disposition",
    m.StepName.RECORD: "Record",
}


def _status(step: m.StepName, state: m.StepState, reason: str = "") -> m.StepStatus:
    return m.StepStatus(step=step, state=state, reason=reason)


def _contract(session: m.Session) -> m.StepStatus:
    c = session.contract
    checked = c.check or any(w.kind is not m.WorkloadKind.COMMAND for w in c.workloads)
    if not checked:
        return _status(
            m.StepName.CONTRACT,
            S.IN_PROGRESS,
            "no correctness check: set a check command or use a torch workload",
        )
    return _status(
        m.StepName.CONTRACT,
        S.DONE,
        f"{len(c.workloads)} workload(s), {metric_legend(c)}, {c.metric.direction.value} is better",
    )


def _baseline(view: SessionView) -> m.StepStatus:
    from session import conduct  # lazy: the measuring engine, only for a recorded baseline

    b, session = view.baseline, view.session
    if b is None:
        return _status(m.StepName.BASELINE, S.NOT_STARTED, "no baseline recorded")
    got = judged_outcome(b)
    if got is None:
        return _status(m.StepName.BASELINE, S.IN_PROGRESS, f"baseline {b.id} not judged yet")
    delta = session.contract.threshold if b.threshold is None else b.threshold
    words = conduct.outcome_words(got, delta)
    if got.blocks_round:
        detail = f": {b.reproducibility_detail}" if b.reproducibility_detail else ""
        return _status(
            m.StepName.BASELINE, S.BLOCKED, f"baseline {b.id} is {words}{detail}; repair it"
        )
    return _status(m.StepName.BASELINE, S.DONE, view.baseline_advice or f"baseline {b.id} {words}")


def _preflight(view: SessionView) -> m.StepStatus:
    answers, fresh = view.preflight, view.session
    classified = (
        fresh.bottleneck is not m.BottleneckClass.UNKNOWN or fresh.bottleneck_evidence.strip()
    )
    if not answers and not view.checklist_touched and not classified:
        return _status(m.StepName.PREFLIGHT, S.NOT_STARTED, "no question answered yet")
    missing = []
    answered = {a.question for a in answers}
    left = [q.value for q in m.PreflightQuestion if q not in answered]
    if left:
        missing.append(f"unanswered: {', '.join(left)}")
    if not classified:
        missing.append("bottleneck not classified")
    if missing:
        return _status(m.StepName.PREFLIGHT, S.IN_PROGRESS, "; ".join(missing))
    unknown = [a.question.value for a in answers if a.kind is m.PreflightAnswerKind.UNKNOWN]
    if unknown:
        return _status(
            m.StepName.PREFLIGHT,
            S.DONE,
            f"unknown: {', '.join(unknown)} (raised again at disposition)",
        )
    return _status(m.StepName.PREFLIGHT, S.DONE, f"bottleneck {fresh.bottleneck.value}")


def _hypotheses(view: SessionView) -> m.StepStatus:
    hyps = view.hypotheses
    if not hyps:
        return _status(m.StepName.HYPOTHESES, S.NOT_STARTED, "no hypothesis written")
    incomplete = [(h, missing_fields(h)) for h in hyps]
    incomplete = [(h, f) for h, f in incomplete if f]
    if len(incomplete) == len(hyps):
        h, fields = incomplete[0]
        return _status(m.StepName.HYPOTHESES, S.IN_PROGRESS, f"{h.id} lacks {', '.join(fields)}")
    return _status(m.StepName.HYPOTHESES, S.DONE, f"{len(hyps)} hypothesis(es)")


def _round(view: SessionView, refusal: list[str]) -> m.StepStatus:
    rounds, session = view.rounds, view.session
    if any(r.status is m.RoundStatus.RUNNING for r in rounds):
        r = next(r for r in rounds if r.status is m.RoundStatus.RUNNING)
        return _status(m.StepName.ROUND, S.IN_PROGRESS, f"round {r.number} running")
    if refusal:
        return _status(m.StepName.ROUND, S.BLOCKED, refusal[0])
    if not view.variants and not rounds:
        return _status(m.StepName.ROUND, S.NOT_STARTED, "no variant yet")
    done = [r for r in rounds if r.status is m.RoundStatus.COMPLETED]
    if done:
        last = done[-1]
        why = round_untrusted(last)
        if why:  # never ✓: its verdicts cannot be relied on
            return _status(m.StepName.ROUND, S.IN_PROGRESS, untrusted_next(session, last, why))
        return _status(m.StepName.ROUND, S.DONE, f"round {last.number}: {last.blocks} blocks")
    if rounds:
        last = rounds[-1]
        return _status(
            m.StepName.ROUND,
            S.IN_PROGRESS,
            f"round {last.number} {last.status.value}: run it again",
        )
    return _status(m.StepName.ROUND, S.NOT_STARTED, "no round run yet")


def untrusted_next(session: m.Session, rnd: m.Round, why: str, what: str = "") -> str:
    """An untrusted round's next step, in words; `what`: the one comparison ("fused/softmax")
    whose own runs make it untrusted, when the round itself is not."""
    if what:
        redo = shlex.join(["gpuopt", "round", session.id])
        head = f"{what} in round {rnd.number} is untrusted: {why}"
        # the cause's words may already say what to do ("fix it and run again")
        return head + (f" ({redo})" if "run again" in why else f"; run the round again ({redo})")
    head = f"round {rnd.number}'s verdicts are untrusted ({why}): "
    if rnd.baseline_reproduced is False:
        again = shlex.join(["gpuopt", "baseline", session.id])
        redo = shlex.join(["gpuopt", "round", session.id])
        return head + f"record the baseline again ({again}) and re-run the round ({redo})"
    return head + f"run the round again ({shlex.join(['gpuopt', 'round', session.id])})"


def _measured_variants(view: SessionView) -> list[m.Variant]:
    return [v for v in view.variants if latest_comparisons_in(view, v)[1]]


def _results(view: SessionView, measured: list[m.Variant]) -> m.StepStatus:
    session = view.session
    if not measured:
        return _status(m.StepName.RESULTS, S.NOT_STARTED, "no comparison yet")
    untrusted: dict[int, tuple[m.Round, str, str]] = {}
    for v in measured:
        rnd, comps = latest_comparisons_in(view, v)
        if rnd is None:
            continue
        whole = round_untrusted(rnd)
        if whole:
            untrusted[rnd.number] = (rnd, whole, "")
            continue
        # each comparison's own trust (quarantined runs, two modes): the one rule every
        # door reads (session.verdicts.shown_verdict)
        for c in comps:
            shown = shown_verdict(c, round=rnd)
            if not shown.trusted:
                what = f"{v.name}/{c.workload}"
                untrusted.setdefault(rnd.number, (rnd, shown.untrusted_why, what))
                break
    if untrusted:  # never ✓ on verdicts that cannot be relied on
        rnd, why, what = untrusted[max(untrusted)]
        return _status(m.StepName.RESULTS, S.IN_PROGRESS, untrusted_next(session, rnd, why, what))
    confirmed = {r.variant_id for r in view.residuals if r.confirmed is not None}
    waiting = [v.name for v in measured if v.hypothesis_id and v.id not in confirmed]
    if waiting:
        return _status(
            m.StepName.RESULTS, S.IN_PROGRESS, f"residual to read for {', '.join(waiting)}"
        )
    return _status(m.StepName.RESULTS, S.DONE, f"{len(measured)} variant(s) read")


def _disposition(view: SessionView, measured: list[m.Variant]) -> m.StepStatus:
    changes = [v for v in measured if not v.probe]
    ready = [v for v in changes if latest_correctness_in(view, v)]
    if not ready:
        why = (
            "no variant has both a comparison and a correctness result"
            if changes
            else "no measured variant to decide on"
        )
        return _status(m.StepName.DISPOSITION, S.BLOCKED if changes else S.NOT_STARTED, why)
    decided = {d.variant_id for d in view.dispositions}
    waiting = [v.name for v in changes if v.id not in decided]
    if len(waiting) == len(changes):
        return _status(m.StepName.DISPOSITION, S.NOT_STARTED, f"to decide: {', '.join(waiting)}")
    if waiting:
        return _status(m.StepName.DISPOSITION, S.IN_PROGRESS, f"to decide: {', '.join(waiting)}")
    return _status(m.StepName.DISPOSITION, S.DONE, f"{len(changes)} variant(s) decided")


def step_states(ledger: Any, session: m.Session) -> list[m.StepStatus]:
    """The state of every step, in the order of the method, read from the ledger (one
    read per table) for `session` as given."""
    view = load_rows(ledger, session.id, session)
    if view.baseline is not None:
        view.baseline_advice = baseline_warning(ledger, session, view.baseline)
    return step_states_of(view)


def step_states_of(view: SessionView) -> list[m.StepStatus]:
    """The state of every step, in the order of the method, of one loaded view."""
    session = view.session
    refusal = round_refusal(session, view.baseline)
    measured = _measured_variants(view)
    states = [
        _contract(session),
        _baseline(view),
        _preflight(view),
        _hypotheses(view),
        _round(view, refusal),
        _results(view, measured),
        _disposition(view, measured),
    ]
    disp = states[-1]
    if disp.state is S.DONE:
        record = _status(m.StepName.RECORD, S.DONE, f"ready: gpuopt export {session.id}")
    elif view.dispositions:
        record = _status(m.StepName.RECORD, S.IN_PROGRESS, "some variants still to decide")
    else:
        record = _status(m.StepName.RECORD, S.NOT_STARTED, "nothing decided yet")
    states.append(record)
    return states
