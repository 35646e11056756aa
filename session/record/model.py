"""The decision record as one model, gathered once from the ledger.

`gather(ledger, session)` reads the session through `session.read_model` (`load_view` and
`record_reads`) and returns a `SessionExport`. Its JSON dump is the "gpuopt-session" format
(docs/decision_record.md); the markdown renderer and the review screens read the same
model, and every verdict in it comes from `session.verdicts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from session import models as m
from session import verdicts as vd
from session.conduct import baseline_words
from session.dispositions import DESCRIPTIONS as CHOICE_WORDS
from session.dispositions import status_suggestion_in
from session.evidence import describe
from session.md import fixed
from session.preflight import CHECKLIST, QUESTIONS, checklist_of
from session.read_model import RecordReads, SessionView, load_view, record_reads
from session.record.plan import measurement_plan
from session.record.rows import (
    AuditRow,
    BaselineRow,
    ChecklistRow,
    ContractRow,
    EnvironmentRow,
    ErrorStatsRow,
    EvidenceRow,
    HistoryRow,
    HooksRow,
    HypothesisRow,
    PlanItem,
    PreflightRow,
    ResidualRow,
    RoundSummaryRow,
    Row,
    SessionInfo,
    StepRow,
    StressRow,
    VariantRow,
    VariantSnapshotRow,
    WorkloadRow,
)
from session.residuals import DESCRIPTIONS as RESIDUAL_WORDS
from session.residuals import draft_round_summary_in
from session.timing import metric_label, metric_text

if TYPE_CHECKING:
    from ledger import Ledger

FORMAT = "gpuopt-session"
# 2: comparisons carry the verdict a reviewer sees (BROKEN when the check failed) with
# speed_verdict, correct, trusted apart; rows carry their round; a summary block.
FORMAT_VERSION = 2


class SummaryRow(Row):
    variant: str
    variant_id: str
    workload: str
    round: int | None = None
    round_trusted: bool = True
    # the verdict's own trust: its round's, and its runs' (quarantined, in two modes)
    trusted: bool = True
    verdict: str = ""  # the shown verdict's text ("BROKEN (NaN 0→80) · untrusted")
    verdict_word: str = ""
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_confidence: float | None = None  # of ci_low..ci_high: the interval that decided
    times: str = "—"  # "4.85× faster"
    times_ci: str = "—"
    baseline_median: float | None = None
    variant_median: float | None = None
    unit: str = ""
    correctness: str = "not checked"
    optimization_class: str | None = None
    disposition: str = "not decided"


class Summary(Row):
    what: str = ""
    machine: str = ""
    baseline_id: str | None = None
    baseline_commit: str | None = None
    baseline_medians: dict[str, float] = Field(default_factory=dict)
    units: dict[str, str] = Field(default_factory=dict)
    attempts: int = 0  # baselines recorded before the one the rounds rest on
    baseline_outcome: str = ""  # its split-half check in the words of `gpuopt baseline`
    # the band the shown verdicts rest on: the latest round's (None: no round yet)
    band: float | None = None
    contract_band: float | None = None
    # stored rows that did not read back, per kind ("variant": 2): left out of every list
    left_out: dict[str, int] = Field(default_factory=dict)
    rows: list[SummaryRow] = Field(default_factory=list)


class ComparisonRow(Row):
    variant: str
    variant_id: str
    workload: str
    scope: str | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: str  # the verdict a reviewer sees: BROKEN when the check failed
    speed_verdict: str
    correct: bool | None = None
    trusted: bool = True
    verdict_words: str = ""  # MEASURABLE: "1.8% slower (real, below the ±2% band)"
    ci_confidence: float | None = None  # of ci_low..ci_high: the interval that decided
    failure: str = ""
    untrusted_why: str = ""
    n: int = 0
    blocks_needed: int | None = None
    untrusted_runs: int = 0
    failed_runs: int = 0
    error: str = ""
    note: str = ""
    trust: dict[str, int] = Field(default_factory=dict)
    baseline_median: float | None = None
    variant_median: float | None = None

    @property
    def shown(self) -> str:
        out = self.verdict + (f" ({self.failure})" if self.failure else "")
        if not self.failure and self.verdict_words:
            out += f" {self.verdict_words}"
        return out + ("" if self.trusted else " · untrusted")


class RoundRow(Row):
    id: str
    number: int
    baseline_id: str
    status: str
    blocks: int
    min_blocks: int
    max_blocks: int
    seed: int
    threshold: float
    budget_s: float | None = None
    variants: list[str] = Field(default_factory=list)
    baseline_check: float | None = None
    baseline_reproduced: bool | None = None
    trusted: bool = True
    untrusted_why: str = ""
    summary: dict[str, Any] = Field(default_factory=dict)  # the engine's facts, as it wrote them
    search_round: RoundSummaryRow | None = None  # None: a record from before it
    started_at: str
    ended_at: str | None = None
    comparisons: list[ComparisonRow] = Field(default_factory=list)
    runs: dict[str, int] = Field(default_factory=dict)


class CheckRow(Row):
    id: str
    variant: str
    variant_id: str
    workload: str
    round: int | None = None
    passed: bool
    failure: str = ""  # in a few words, when it failed
    exact: bool = False
    trials: int = 1
    seeds: list[int] = Field(default_factory=list)
    suggested_class: str | None = None
    exit_code: int | None = None
    error: str = ""
    warnings: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)  # what the check tried: the harness's
    stress: list[StressRow] = Field(default_factory=list)
    nondeterminism: dict[str, Any] = Field(default_factory=dict)  # per side, the harness's
    class_reason: str = ""
    artifact_bytes: int | None = None
    stats: list[ErrorStatsRow] = Field(default_factory=list)
    created_at: str


class DispositionRow(Row):
    id: str
    variant: str
    variant_id: str
    round: int | None = None
    choice: str
    choice_words: str = ""
    # "class" is a keyword: the field is named for Python, the key for the format
    optimization_class: str | None = Field(default=None, alias="class")
    accepted_semantics: bool = False
    guards: list[str] = Field(default_factory=list)
    fallback: str = ""
    failure_cases: list[str] = Field(default_factory=list)
    remaining_bottlenecks: list[str] = Field(default_factory=list)
    reason: str = ""
    reopen_when: str = ""
    open_questions: list[str] = Field(default_factory=list)
    created_at: str

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class SessionExport(Row):
    format: str = FORMAT
    version: int = FORMAT_VERSION
    session: SessionInfo
    summary: Summary = Field(default_factory=Summary)
    contract: ContractRow = Field(default_factory=ContractRow)
    steps: list[StepRow] = Field(default_factory=list)
    workloads: list[WorkloadRow] = Field(default_factory=list)
    baselines: list[BaselineRow] = Field(default_factory=list)
    preflight: list[PreflightRow] = Field(default_factory=list)
    checklist: list[ChecklistRow] = Field(default_factory=list)
    hypotheses: list[HypothesisRow] = Field(default_factory=list)
    evidence: list[EvidenceRow] = Field(default_factory=list)
    variants: list[VariantRow] = Field(default_factory=list)
    rounds: list[RoundRow] = Field(default_factory=list)
    correctness: list[CheckRow] = Field(default_factory=list)
    audits: list[AuditRow] = Field(default_factory=list)
    residuals: list[ResidualRow] = Field(default_factory=list)
    dispositions: list[DispositionRow] = Field(default_factory=list)
    measurement_plan: list[PlanItem] = Field(default_factory=list)
    # The profile section, as markdown lines from session.profile.record (gpuopt profile);
    # rendered beside the evidence. Not part of the JSON: the evidence rows carry the data.
    _profile_lines: list[str] = PrivateAttr(default_factory=list)

    @property
    def profile_lines(self) -> list[str]:
        return self._profile_lines

    def dump(self) -> dict[str, Any]:
        """The JSON format: plain types, documented keys ("class", not the field name)."""
        out: dict[str, Any] = self.model_dump(mode="json", by_alias=True)
        return out


# ---------------------------------------------------------------------------- gathering


def _dump(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json")
    return out


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def round_at(rounds: list[m.Round], at: datetime) -> m.Round | None:
    """The round a row made at `at` belongs to: the last one started by then."""
    found = None
    for r in rounds:
        if r.started_at <= at:
            found = r
    return found


def unit_of(contract: m.Contract, w: m.Workload) -> str:
    return metric_label(contract, w)[1] or ""


def gather(
    ledger: Ledger, session: m.Session, view: SessionView | None = None, folder: Path | None = None
) -> SessionExport:
    """The whole record of a session, read once (`folder`: where it will be written, for
    the pictures that go beside it)."""

    view = view or load_view(ledger, session.id, run_rows=True)
    reads = record_reads(ledger, view)
    session = view.session
    contract = session.contract
    names = {v.id: v.name for v in view.variants}
    scopes = {w.name: w.scope.value for w in contract.workloads}
    rounds = view.rounds
    correctness = sorted(view.correctness, key=lambda c: c.created_at)
    audits = sorted(view.audits, key=lambda a: a.created_at)
    residuals = sorted(view.residuals, key=lambda r: r.created_at)
    answers = {p.question: p for p in view.preflight}

    def number_at(at: datetime) -> int | None:
        r = round_at(rounds, at)
        return r.number if r else None

    out = SessionExport(
        session=SessionInfo(
            id=session.id,
            title=session.title,
            repo=session.repo,
            created_at=session.created_at.isoformat(),
            metric=contract.metric.name,
            metric_source=contract.metric.source.value,
            metric_pattern=contract.metric.pattern,
            direction=contract.metric.direction.value,
            unit=contract.metric.unit,
            metrics={w.name: metric_text(contract, w) for w in contract.workloads},
            threshold=contract.threshold,
            check=contract.check,
            hooks=HooksRow.model_validate(_dump(contract.hooks)),
            launcher=contract.launcher,
            timeout_s=contract.timeout_s,
            bottleneck=session.bottleneck.value,
            bottleneck_evidence=session.bottleneck_evidence,
        ),
        contract=ContractRow.model_validate(_dump(contract)),
        steps=[StepRow.model_validate(_dump(s)) for s in view.steps],
        workloads=[
            WorkloadRow(**_dump(w), metric=metric_text(contract, w)) for w in contract.workloads
        ],
        baselines=[_baseline_row(b) for b in view.baselines],
        preflight=[
            PreflightRow(
                session_id=session.id,
                question=q.value,
                prompt=QUESTIONS[q],
                kind=a.kind.value if a else m.PreflightAnswerKind.UNKNOWN.value,
                text=a.text if a else "",
                evidence_id=a.evidence_id if a else None,
                concern_area=a.concern_area.value if a and a.concern_area else None,
                answered=a is not None,
                updated_at=_iso(a.updated_at) if a else None,
            )
            for q in m.PreflightQuestion
            for a in [answers.get(q)]
        ],
        checklist=[
            ChecklistRow(number=c.number, item=CHECKLIST[c.number], done=c.done, note=c.note)
            for c in checklist_of(view.checklist)
        ],
        hypotheses=[
            HypothesisRow(
                **_dump(h),
                variants=[v.name for v in view.variants if v.hypothesis_id == h.id],
                history=[HistoryRow.model_validate(_dump(e)) for e in reads.history.get(h.id, [])],
                suggested_status=_suggested_status(ledger, view, h),
            )
            for h in view.hypotheses
        ],
        evidence=[
            EvidenceRow(
                **_dump(e),
                variant=names.get(e.variant_id, e.variant_id) if e.variant_id else None,
                description=describe(e),
            )
            for e in reads.evidence
        ],
        variants=[
            VariantRow(
                id=v.id,
                name=v.name,
                hypothesis_id=v.hypothesis_id,
                snapshot=VariantSnapshotRow(
                    commit=v.snapshot.commit, ref=v.snapshot.ref, dirty=v.snapshot.dirty
                ),
                probe=v.probe,
                kind=v.kind.value,
                source=v.source,
                diff_stat=v.diff_stat,
                files_changed=v.files_changed,
                created_at=v.created_at.isoformat(),
            )
            for v in view.variants
        ],
        rounds=[_round_row(ledger, view, reads, r, names, scopes) for r in rounds],
        correctness=[
            CheckRow(
                id=c.id,
                variant=names.get(c.variant_id, c.variant_id),
                variant_id=c.variant_id,
                workload=c.workload,
                round=number_at(c.created_at),
                passed=c.passed,
                failure=vd.failure_words(c),
                exact=c.exact,
                trials=c.trials,
                seeds=c.seeds,
                suggested_class=c.suggested_class.value if c.suggested_class else None,
                exit_code=c.exit_code,
                error=c.error,
                warnings=c.warnings,
                options=c.options,
                # a stress trial is the harness's dict: one of another shape is no trial
                stress=[StressRow.model_validate(s) for s in c.stress if isinstance(s, dict)],
                nondeterminism=c.nondeterminism,
                class_reason=c.class_reason,
                artifact_bytes=c.artifact_bytes,
                stats=[ErrorStatsRow(**_dump(s), headline=vd.error_headline(s)) for s in c.stats],
                created_at=c.created_at.isoformat(),
            )
            for c in correctness
        ],
        audits=[
            AuditRow(
                **{**_dump(a), "arm": names.get(a.arm, a.arm)},
                arm_id=a.arm,
                round=number_at(a.created_at),
            )
            for a in audits
        ],
        residuals=[
            ResidualRow(
                **_dump(r),
                variant=names.get(r.variant_id, r.variant_id),
                description=RESIDUAL_WORDS[r.confirmed or r.suggested],
                round=next((x.number for x in rounds if x.id == r.round_id), None),
            )
            for r in residuals
        ],
        dispositions=[
            DispositionRow(
                id=d.id,
                variant=names.get(d.variant_id, d.variant_id),
                variant_id=d.variant_id,
                round=_resting_round(view, d.variant_id, d.created_at),
                choice=d.choice.value,
                choice_words=CHOICE_WORDS[d.choice],
                **{"class": d.optimization_class.value if d.optimization_class else None},
                accepted_semantics=d.accepted_semantics,
                guards=d.guards,
                fallback=d.fallback,
                failure_cases=d.failure_cases,
                remaining_bottlenecks=d.remaining_bottlenecks,
                reason=d.reason,
                reopen_when=d.reopen_when,
                open_questions=d.open_questions,
                created_at=d.created_at.isoformat(),
            )
            for d in view.dispositions
        ],
        measurement_plan=[
            *measurement_plan(
                session, _planned_baselines(view), view.variants, rounds, reads.evidence
            )
        ],
    )
    out.summary = _summary(view, out, CHOICE_WORDS)
    out.summary.baseline_outcome = _baseline_outcome(view, out.summary.baseline_id)
    for row in view.unreadable:
        kind = _ROW_KINDS.get(row.table, row.table.replace("_", " "))
        out.summary.left_out[kind] = out.summary.left_out.get(kind, 0) + 1
    out._profile_lines = _profile_section(ledger, session, folder, view)
    return out


# A ledger table's rows, named as the record names them.
_ROW_KINDS = {
    "sessions": "session", "baselines": "baseline", "hypotheses": "hypothesis",
    "hypothesis_events": "hypothesis history", "variants": "variant", "evidence": "evidence",
    "preflight": "preflight answer", "rounds": "round", "runs": "run", "hooks": "hook run",
    "audits": "audit", "correctness": "correctness check", "comparisons": "comparison",
    "residuals": "residual", "dispositions": "decision",
}  # fmt: skip


def _baseline_outcome(view: SessionView, baseline_id: str | None) -> str:
    """The baseline's outcome in the words `gpuopt baseline` says it, at its own band."""

    b = next((x for x in view.baselines if x.id == baseline_id), None)
    return baseline_words(b, view.session.contract.threshold) if b is not None else ""


def _profile_section(
    ledger: Ledger, session: m.Session, folder: Path | None = None, view: SessionView | None = None
) -> list[str]:
    """The profile section of `gpuopt profile` (session.profile.record)."""
    # lazy: profile.record -> profile.text -> session.record -> this module (a cycle)
    from session.profile.record import record_markdown

    return record_markdown(ledger, session, folder=folder, view=view)


def _suggested_status(ledger: Ledger, view: SessionView, h: m.Hypothesis) -> str | None:
    """The status the latest decision on one of its variants suggests, when the
    hypothesis does not say it yet (session.dispositions.status_suggestion)."""

    mine = {v.id for v in view.variants if v.hypothesis_id == h.id}
    decided = [d for d in view.dispositions if d.variant_id in mine]
    offer = status_suggestion_in(view, decided[-1]) if decided else None
    if offer is None:
        return None
    return f"{offer.status.value}, confidence {offer.confidence.value}"


def _planned_baselines(view: SessionView) -> list[m.Baseline]:
    """The baselines a figure rests on (those of the rounds, else the latest): an earlier
    attempt is one line of the record, not a block of the plan."""
    used = {r.baseline_id for r in view.rounds}
    rows = [b for b in view.baselines if b.id in used]
    return rows or view.baselines[-1:]


def _baseline_row(b: m.Baseline) -> BaselineRow:
    return BaselineRow.model_validate(
        {
            "baseline_id": b.id,
            "snapshot": {
                "id": b.snapshot.id,
                "commit": b.snapshot.commit,
                "ref": b.snapshot.ref,
                "dirty": b.snapshot.dirty,
                "head": b.snapshot.head,
                "warnings": b.snapshot.warnings,
            },
            "environment": _dump(b.environment),
            "contract_hash": b.contract_hash,
            "reproducible": b.reproducibility is m.Reproducibility.REPRODUCIBLE,
            "reproducibility": b.reproducibility.value,
            "reproducibility_detail": b.reproducibility_detail,
            "reference": b.reference,
            "runs_per_workload": b.runs_per_workload,
            "reset_procedure": b.reset_procedure,
            "created_at": b.created_at.isoformat(),
        }
    )


def _round_row(
    ledger: Ledger,
    view: SessionView,
    reads: RecordReads,
    r: m.Round,
    names: dict[str, str],
    scopes: dict[str, str],
) -> RoundRow:
    medians = reads.medians.get(r.id, {})
    trust = reads.trust.get(r.id, {})
    rows = []
    for c in view.comparisons.get(r.id, []):
        floor = getattr(view, "floors", {}).get(c.workload)
        shown = vd.shown_verdict(c, view.correctness, r, floor)
        rows.append(
            ComparisonRow(
                variant=names.get(c.variant_id, c.variant_id),
                variant_id=c.variant_id,
                workload=c.workload,
                scope=scopes.get(c.workload),
                ratio=c.ratio,
                ci_low=c.ci_low,
                ci_high=c.ci_high,
                **shown.fields(),
                failure=shown.failure,
                untrusted_why=shown.untrusted_why,
                n=c.n,
                blocks_needed=shown.more_blocks,  # offered only where more blocks could help
                untrusted_runs=c.untrusted_runs,
                failed_runs=c.failed_runs,
                error=c.error,
                note=shown.note_shown,  # no "N more blocks" beside an untrusted verdict
                trust={
                    t: n
                    for (arm, w, t), n in trust.items()
                    if arm == c.variant_id and w == c.workload
                },
                baseline_median=medians.get(("baseline", c.workload)),
                variant_median=medians.get((c.variant_id, c.workload)),
            )
        )
    search = dict(draft_round_summary_in(view, r))
    person = (r.summary or {}).get("search_round")
    written = {k for k, v in person.items() if v} if isinstance(person, dict) else set()
    # The drafted lines in this record's words and verdicts, unless the person wrote them.
    ours = _round_summary_words(view, r, rows)
    search.update({k: v for k, v in ours.items() if k not in written})
    why = vd.round_untrusted(r)
    return RoundRow(
        id=r.id,
        number=r.number,
        baseline_id=r.baseline_id,
        status=r.status.value,
        blocks=r.blocks,
        min_blocks=r.min_blocks,
        max_blocks=r.max_blocks,
        seed=r.seed,
        threshold=r.threshold,
        budget_s=r.budget_s,
        variants=[names.get(v, v) for v in r.variant_ids],
        baseline_check=r.baseline_check,
        baseline_reproduced=r.baseline_reproduced,
        trusted=not why,
        untrusted_why=why,
        summary=r.summary,
        search_round=RoundSummaryRow.model_validate(search),
        started_at=r.started_at.isoformat(),
        ended_at=_iso(r.ended_at),
        comparisons=rows,
        runs=reads.runs.get(r.id, {"total": 0}),
    )


def _round_summary_words(
    view: SessionView, r: m.Round, rows: list[ComparisonRow]
) -> dict[str, str]:
    """The round summary's drafted fields in words: shown verdicts, the falsifier named as
    the experiment it is, residual classes and choices in words, only the decisions that
    rest on this round, and the reset procedure by reference (it is in the baseline)."""

    names = {v.id: v.name for v in view.variants}
    hyps = [view.hypothesis(v.hypothesis_id) for v in view.variants if v.id in r.variant_ids]
    residuals = [x for x in view.residuals if x.round_id == r.id]
    decided = [d for d in view.dispositions
               if _resting_round(view, d.variant_id, d.created_at) == r.number]  # fmt: skip
    return {
        "results": "; ".join(
            f"{x.variant}/{x.workload}: "
            + (f"{fixed(x.ratio)} " if fixed(x.ratio) != "—" else "")
            + x.shown
            for x in rows
        ),
        "hypotheses": "; ".join(
            dict.fromkeys(
                f"{h.id} {h.title} (cheapest falsifier: {h.falsifier or 'none written'})"
                for h in hyps
                if h is not None
            )
        ),
        "confidence_updates": "; ".join(
            f"{names.get(x.variant_id, x.variant_id)}: {_moved(x.confidence_from, x.confidence_to)}"
            for x in residuals
            if x.confidence_from and x.confidence_to
        ),
        "residuals": "; ".join(
            f"{names.get(x.variant_id, x.variant_id)}: "
            + (x.confirmed or x.suggested).value.replace("_", " ")
            + ("" if x.confirmed else " (suggested)")
            for x in residuals
        ),
        "disposition": "; ".join(
            f"{names.get(d.variant_id, d.variant_id)}: {CHOICE_WORDS[d.choice]}" for d in decided
        ),
        "reset_procedure": "the baseline's reset procedure (in the Baseline section)",
    }


def _moved(before: m.Confidence, after: m.Confidence) -> str:
    return f"{before.value}, unchanged" if before is after else f"{before.value} → {after.value}"


def _resting_round(view: SessionView, vid: str, at: datetime | None) -> int | None:
    """The round a decision on a variant rests on: the last one that compared it before
    the decision (the last one at all, for no time)."""
    found = None
    for r in view.rounds:
        if at is not None and r.started_at > at:
            continue
        if any(c.variant_id == vid for c in view.comparisons.get(r.id, [])):
            found = r.number
    return found


def _machine(env: EnvironmentRow) -> str:
    gpu = ", ".join(dict.fromkeys(g.name or "?" for g in env.gpus))
    note = env.gpu_note
    what = gpu or (f"no GPU ({note[:60]})" if note else "no GPU")
    cpu = env.cpu_model
    parts = [what, f"{cpu} × {env.cpu_count or '?'}" if cpu else "", env.hostname]
    return " · ".join(p for p in parts if p)


def _summary(
    view: SessionView, out: SessionExport, choice_words: Mapping[m.DispositionChoice, str]
) -> Summary:
    session = view.session
    contract = session.contract
    units = {w.name: unit_of(contract, w) for w in contract.workloads}
    last = view.last_round
    base_id = last.baseline_id if last else (view.baseline.id if view.baseline else None)
    base = next((b for b in out.baselines if b.baseline_id == base_id), None)
    attempts = sum(1 for b in out.baselines if b.created_at < base.created_at) if base else 0
    figure = "; ".join(dict.fromkeys(metric_text(contract, w) for w in contract.workloads))
    summary = Summary(
        what=f"{session.title}: {figure}, {contract.metric.direction.value} is better",
        machine=_machine(base.environment) if base else "",
        baseline_id=base_id,
        baseline_commit=base.snapshot.commit if base else None,
        baseline_medians=dict(base.reference) if base else {},
        units=units,
        attempts=attempts,
        band=last.threshold if last else None,
        contract_band=contract.threshold,
    )
    checks = {c.id: c for c in out.correctness}
    for v in view.variants:
        d = next((x for x in reversed(out.dispositions) if x.variant_id == v.id), None)
        # The row shows the latest round that measured the variant: a decision resting on
        # an earlier one says so, so a check that failed since never reads as kept-and-fine.
        number = next(
            (r.number for r in reversed(out.rounds)
             if any(c.variant_id == v.id for c in r.comparisons)),
            d.round if d else None,
        )  # fmt: skip
        rnd = next((r for r in out.rounds if r.number == number), None)
        comps = [c for c in rnd.comparisons if c.variant_id == v.id] if rnd else []
        mine = [c for c in checks.values() if c.variant_id == v.id]
        suggested = next((c.suggested_class for c in reversed(mine) if c.suggested_class), None)
        for c in comps or [None]:  # type: ignore[list-item]
            workload = c.workload if c else "—"
            row = SummaryRow(
                variant=v.name,
                variant_id=v.id,
                workload=workload,
                round=number,
                round_trusted=rnd.trusted if rnd else True,
                optimization_class=(d.optimization_class if d else None) or suggested,
                disposition=_decision_words(d, c, number, choice_words),
                unit=units.get(workload, ""),
                correctness=_correct_words(mine, workload, rnd),
            )
            if c is not None:
                row.verdict = c.shown
                row.verdict_word = c.verdict
                row.trusted = c.trusted
                row.ratio, row.ci_low, row.ci_high = c.ratio, c.ci_low, c.ci_high
                row.ci_confidence = c.ci_confidence
                if c.verdict != m.Verdict.BROKEN.value:  # a broken variant's speed is moot
                    row.times = vd.times_text(c.ratio)
                    row.times_ci = vd.times_ci_text(c.ci_low, c.ci_high)
                row.baseline_median = c.baseline_median
                row.variant_median = c.variant_median
            summary.rows.append(row)
    return summary


def _decision_words(
    d: DispositionRow | None,
    c: ComparisonRow | None,
    number: int | None,
    choice_words: Mapping[m.DispositionChoice, str],
) -> str:
    """The decision in words, with the round it rests on when a later one measured the
    variant again ("keep as the default path on round 1; its check failed in round 2")."""
    if d is None:
        return "not decided"
    text = str(choice_words[m.DispositionChoice(d.choice)])
    if d.round is None or number is None or d.round == number:
        return text
    since = (
        "its check failed in" if c is not None and c.verdict == m.Verdict.BROKEN.value
        else "measured again in"
    )  # fmt: skip
    return f"{text} on round {d.round}; {since} round {number}"


def _correct_words(checks: list[CheckRow], workload: str, rnd: RoundRow | None) -> str:
    """The check of one variant on one workload (or the check command) in words."""
    mine = [c for c in checks if c.workload in (workload, vd.CHECK_COMMAND)]
    if rnd is not None and rnd.ended_at:
        before = [c for c in mine if c.created_at <= rnd.ended_at]
        mine = before or mine
    latest: dict[str, CheckRow] = {}
    for c in mine:
        latest[c.workload] = c
    if not latest:
        return "not checked"
    failed = [c for c in latest.values() if not c.passed]
    if failed:
        return "fails: " + "; ".join(dict.fromkeys(c.failure or "check failed" for c in failed))
    parts = []
    for c in latest.values():
        # a check that failed earlier on the same snapshot and passes now is flaky: say so
        once = [x.round for x in mine if x.workload == c.workload and not x.passed
                and x.created_at < c.created_at]  # fmt: skip
        when = ""
        if once:
            rounds = ", ".join(dict.fromkeys(round_words(n) for n in once))
            when = f" in {round_words(c.round)}; failed in {rounds}"
        if c.workload == vd.CHECK_COMMAND:
            parts.append("check command passes" + when)
        elif c.exact:
            parts.append(f"bit-identical ({c.trials} trials){when}")
        else:
            worst = max(
                (s.max_rel for s in c.stats if s.max_rel is not None),
                default=None,
            )
            tail = f", max rel {vd.sci(worst)}" if worst is not None else ""
            parts.append(f"passes ({c.trials} trials{tail}){when}")
    return "; ".join(parts)


def round_words(number: int | None) -> str:
    return "an unknown round" if number is None else f"round {number}"
