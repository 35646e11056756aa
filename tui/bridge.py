"""What the app reads from the ledger and asks of the engine and the method.

The screens never reach into `session.*` directly: they read a `SessionView` (one
consistent picture of a session, loaded in one go) and call the functions below. Each call
goes to the real capability (`session.conduct`, `session.steps`, `session.hypotheses`,
`session.dispositions`, `session.residuals`); where a capability has not been installed,
a small stand-in keeps the screen usable and says so. No textual import here, no torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from session import models as m

STEP_ORDER: tuple[m.StepName, ...] = tuple(m.StepName)

STEP_TITLES: dict[m.StepName, str] = {
    m.StepName.CONTRACT: "Contract",
    m.StepName.BASELINE: "Baseline",
    m.StepName.PREFLIGHT: "Preflight",
    m.StepName.HYPOTHESES: "Hypotheses",
    m.StepName.ROUND: "Round",
    m.StepName.RESULTS: "Results",
    m.StepName.DISPOSITION: "Disposition",
    m.StepName.RECORD: "Record",
}


class Unavailable(Exception):
    """A capability this install does not have yet."""


def _optional(module: str, name: str) -> Callable[..., Any] | None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(mod, name, None)


def _required(module: str, name: str, what: str) -> Callable[..., Any]:
    fn = _optional(module, name)
    if fn is None:
        raise Unavailable(f"{what} is not available in this install ({module}.{name} is missing)")
    return fn


# ---------------------------------------------------------------------------- the view


@dataclass
class SessionView:
    session: m.Session
    baselines: list[m.Baseline] = field(default_factory=list)
    hypotheses: list[m.Hypothesis] = field(default_factory=list)
    variants: list[m.Variant] = field(default_factory=list)
    rounds: list[m.Round] = field(default_factory=list)
    comparisons: dict[str, list[m.Comparison]] = field(default_factory=dict)  # round id -> rows
    correctness: list[m.CorrectnessResult] = field(default_factory=list)
    audits: list[m.Audit] = field(default_factory=list)
    residuals: list[m.Residual] = field(default_factory=list)
    dispositions: list[m.Disposition] = field(default_factory=list)
    preflight: list[m.PreflightAnswer] = field(default_factory=list)
    steps: list[m.StepStatus] = field(default_factory=list)
    baseline_runs: int = 0
    suggestions: dict[str, tuple[m.ResidualClass, str]] = field(default_factory=dict)
    # rows of this session that do not read back as their model (ledger.store.UnreadableRow):
    # named on the screen, left out of every list above
    unreadable: list[Any] = field(default_factory=list)
    # the session as read, with its row version: a save writes only over this version
    session_read: Any = None

    @property
    def baseline(self) -> m.Baseline | None:
        return self.baselines[-1] if self.baselines else None

    @property
    def last_round(self) -> m.Round | None:
        return self.rounds[-1] if self.rounds else None

    def variant_name(self, vid: str) -> str:
        if vid == "baseline":
            return "baseline"
        for v in self.variants:
            if v.id == vid:
                return v.name
        return vid[:8]

    def hypothesis(self, hid: str | None) -> m.Hypothesis | None:
        return next((h for h in self.hypotheses if h.id == hid), None)

    def step(self, name: m.StepName) -> m.StepStatus:
        for s in self.steps:
            if s.step is name:
                return s
        return m.StepStatus(step=name)

    def correctness_of(self, vid: str) -> list[m.CorrectnessResult]:
        return [c for c in self.correctness if c.variant_id == vid]

    def disposition_of(self, vid: str) -> m.Disposition | None:
        rows = [d for d in self.dispositions if d.variant_id == vid]
        return rows[-1] if rows else None

    def residual_of(self, vid: str) -> m.Residual | None:
        rows = [r for r in self.residuals if r.variant_id == vid]
        return rows[-1] if rows else None


def load_view(ledger: Any, session_id: str) -> SessionView:
    """One consistent picture of a session. Its rows that do not validate are left out of
    the lists and named in `view.unreadable`; an unreadable session row itself raises
    `ledger.store.UnreadableRowError` (one line: table and rowid)."""
    outer = ledger.unreadable
    ledger.unreadable = []  # collect this view's own unreadable rows
    try:
        view = _load_view(ledger, session_id)
        view.unreadable = list(ledger.unreadable)
    finally:
        met = ledger.unreadable
        ledger.unreadable = outer
        for row in met:
            if row not in outer:
                outer.append(row)
    return view


def _load_view(ledger: Any, session_id: str) -> SessionView:
    read = ledger.get_versioned(m.Session, session_id)
    if read is None:
        raise LookupError(f"no session {session_id} in {ledger.path}")
    session = read.model
    sid = session.id
    view = SessionView(
        session_read=read,
        session=session,
        baselines=ledger.list(m.Baseline, session_id=sid, order_by="created_at, rowid"),
        hypotheses=ledger.list(m.Hypothesis, session_id=sid, order_by="created_at, rowid"),
        variants=ledger.list(m.Variant, session_id=sid, order_by="created_at, rowid"),
        rounds=ledger.list(m.Round, session_id=sid, order_by="number, rowid"),
        correctness=ledger.list(m.CorrectnessResult, session_id=sid),
        audits=ledger.list(m.Audit, session_id=sid),
        residuals=ledger.list(m.Residual, session_id=sid),
        dispositions=ledger.list(m.Disposition, session_id=sid, order_by="created_at, rowid"),
        preflight=ledger.list(m.PreflightAnswer, session_id=sid),
    )
    for r in view.rounds:
        view.comparisons[r.id] = ledger.list(m.Comparison, round_id=r.id)
    if view.baseline is not None:
        row = ledger.query(
            "SELECT COUNT(*) AS n FROM runs WHERE baseline_id = ? AND round_id IS NULL",
            (view.baseline.id,),
        )
        view.baseline_runs = int(row[0]["n"]) if row else 0
    view.steps = step_states(ledger, session, view)
    return view


# ---------------------------------------------------------------------------- steps


def step_states(
    ledger: Any, session: m.Session, view: SessionView | None = None
) -> list[m.StepStatus]:
    real = _optional("session.steps", "step_states")
    if real is not None:
        try:
            got = list(real(ledger, session))
            if got:
                return got
        except Exception:  # the method's own error must not blank the rail
            pass
    return _fallback_steps(view) if view is not None else [m.StepStatus(step=s) for s in STEP_ORDER]


def _fallback_steps(v: SessionView) -> list[m.StepStatus]:
    S, T = m.StepName, m.StepState
    out: dict[m.StepName, m.StepStatus] = {}
    out[S.CONTRACT] = m.StepStatus(step=S.CONTRACT, state=T.DONE)
    b = v.baseline
    if b is None:
        out[S.BASELINE] = m.StepStatus(step=S.BASELINE, reason="no baseline recorded yet")
    elif b.reproducibility is m.Reproducibility.NOT_REPRODUCIBLE:
        out[S.BASELINE] = m.StepStatus(
            step=S.BASELINE, state=T.BLOCKED, reason="baseline not reproducible: repair it first"
        )
    else:
        out[S.BASELINE] = m.StepStatus(step=S.BASELINE, state=T.DONE)
    answered = len(v.preflight)
    out[S.PREFLIGHT] = m.StepStatus(
        step=S.PREFLIGHT,
        state=T.DONE
        if answered >= len(m.PreflightQuestion)
        else (T.IN_PROGRESS if answered else T.NOT_STARTED),
        reason=""
        if answered >= len(m.PreflightQuestion)
        else f"{answered} of {len(m.PreflightQuestion)} questions answered",
    )
    out[S.HYPOTHESES] = m.StepStatus(
        step=S.HYPOTHESES,
        state=T.DONE if v.hypotheses else T.NOT_STARTED,
        reason="" if v.hypotheses else "write a hypothesis before any variant",
    )
    if b is None or b.reproducibility is m.Reproducibility.NOT_REPRODUCIBLE:
        out[S.ROUND] = m.StepStatus(
            step=S.ROUND, state=T.BLOCKED, reason="needs a reproducible baseline"
        )
    elif not v.variants:
        out[S.ROUND] = m.StepStatus(step=S.ROUND, state=T.BLOCKED, reason="add a variant first")
    else:
        r = v.last_round
        done = r is not None and r.status is m.RoundStatus.COMPLETED
        out[S.ROUND] = m.StepStatus(
            step=S.ROUND,
            state=T.DONE if done else (T.IN_PROGRESS if r else T.NOT_STARTED),
            reason="" if r else f"{len(v.variants)} variant(s) ready",
        )
    has_cmp = any(v.comparisons.values())
    out[S.RESULTS] = m.StepStatus(
        step=S.RESULTS,
        state=T.DONE if has_cmp else T.BLOCKED,
        reason="" if has_cmp else "no round results yet",
    )
    disposed = {d.variant_id for d in v.dispositions}
    todo = [x for x in v.variants if x.id not in disposed]
    out[S.DISPOSITION] = m.StepStatus(
        step=S.DISPOSITION,
        state=(
            T.DONE
            if v.variants and not todo
            else T.IN_PROGRESS
            if disposed
            else T.BLOCKED
            if not has_cmp
            else T.NOT_STARTED
        ),
        reason="" if not todo else f"{len(todo)} variant(s) without a decision",
    )
    out[S.RECORD] = m.StepStatus(
        step=S.RECORD,
        state=T.DONE if v.dispositions else T.NOT_STARTED,
        reason="" if v.dispositions else "decide at least one variant first",
    )
    return [out[s] for s in STEP_ORDER]


# ---------------------------------------------------------------------------- engine


def record_baseline(ledger: Any, session: m.Session, **kw: Any) -> m.Baseline:
    fn = _required("session.conduct", "record_baseline", "recording a baseline")
    return fn(ledger, session, **kw)  # type: ignore[no-any-return]


def run_round(ledger: Any, session: m.Session, **kw: Any) -> m.Round:
    fn = _required("session.conduct", "run_round", "running a round")
    return fn(ledger, session, **kw)  # type: ignore[no-any-return]


def add_variant(ledger: Any, session: m.Session, name: str, **kw: Any) -> m.Variant:
    fn = _required("session.conduct", "add_variant", "adding a variant")
    return fn(ledger, session, name, **kw)  # type: ignore[no-any-return]


def engine_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that carry one clear line for the person."""
    errors: list[type[BaseException]] = [Unavailable]
    for mod, name in (
        ("session.conduct", "ConductError"),
        ("session.hypotheses", "HypothesisError"),
        ("session.gates", "GateRefusal"),
        ("ledger", "LedgerError"),
    ):
        cls = _optional(mod, name)
        if isinstance(cls, type):
            errors.append(cls)
    return tuple(errors)


def gate_refusal_type() -> tuple[type[BaseException], ...]:
    cls = _optional("session.gates", "GateRefusal")
    return (cls,) if isinstance(cls, type) else ()


# ---------------------------------------------------------------------------- method


def add_hypothesis(
    ledger: Any, session: m.Session, **fields: Any
) -> tuple[m.Hypothesis, list[m.Hypothesis]]:
    real = _optional("session.hypotheses", "add_hypothesis")
    if real is not None:
        return real(ledger, session, **fields)  # type: ignore[no-any-return]
    h = m.Hypothesis(session_id=session.id, **fields)
    event = m.HypothesisEvent(hypothesis_id=h.id, field="created", to_value=h.status.value)
    with ledger.write():
        ledger.put(h, event)
    return h, similar_rejected(ledger, h)


def similar_rejected(ledger: Any, h: m.Hypothesis, limit: int = 5) -> list[m.Hypothesis]:
    """Rejected hypotheses, from any session, whose text resembles this one."""
    real = _optional("session.hypotheses", "similar_rejected")
    if real is not None:
        try:
            return list(real(ledger, h))[:limit]
        except Exception:
            pass
    text = " ".join([h.title, h.symptom, h.mechanism, h.predicted_effect])
    found = ledger.search_hypotheses(text, limit=limit + 1, status=m.HypothesisStatus.REJECTED)
    return [x for x in found if x.id != h.id][:limit]


def set_hypothesis_status(
    ledger: Any, h: m.Hypothesis, status: m.HypothesisStatus, why: str, reopen_when: str = ""
) -> None:
    real = _optional("session.hypotheses", "set_status")
    if real is not None:
        real(ledger, h, status, why, reopen_when=reopen_when or None)
        return
    if reopen_when:
        h = h.model_copy(update={"reopen_when": reopen_when})
    event = m.HypothesisEvent(
        hypothesis_id=h.id,
        field="status",
        from_value=h.status.value,
        to_value=status.value,
        why=why,
    )
    h2 = h.model_copy(update={"status": status})
    ledger.put(h2, event)


def edit_hypothesis(ledger: Any, h: m.Hypothesis, fields: dict[str, Any]) -> m.Hypothesis:
    real = _optional("session.hypotheses", "edit_hypothesis")
    if real is not None:
        return real(ledger, h, "edited in the app", **fields)  # type: ignore[no-any-return]
    new = m.Hypothesis.model_validate({**h.model_dump(), **fields})
    ledger.put(new, m.HypothesisEvent(hypothesis_id=h.id, field="edited", why="edited in the app"))
    return new


def suggest_residual(
    view: SessionView, variant: m.Variant, ledger: Any = None
) -> m.ResidualClass | None:
    """The residual class the round suggests for a variant, for the person to confirm."""
    got = residual_suggestion(view, variant, ledger)
    return got[0] if got else None


def residual_suggestion(
    view: SessionView, variant: m.Variant, ledger: Any = None
) -> tuple[m.ResidualClass, str] | None:
    """(class, explanation) for a measured variant; None before any comparison."""
    rnd = view.last_round
    if rnd is None:
        return None
    if variant.id in view.suggestions:
        return view.suggestions[variant.id]
    rows = [c for c in view.comparisons.get(rnd.id, []) if c.variant_id == variant.id]
    if not rows:
        return None
    real = _optional("session.residuals", "suggest_residual")
    result: tuple[m.ResidualClass, str] | None = None
    if real is not None and ledger is not None:
        try:
            sug = real(ledger, view.session, variant)
            result = (m.ResidualClass(sug.suggested), str(getattr(sug, "explanation", "")))
        except Exception:
            result = None
    if result is None:
        result = _fallback_residual(view, variant, rows)
    if result is not None:
        view.suggestions[variant.id] = result
    return result


def _fallback_residual(
    view: SessionView, variant: m.Variant, rows: list[m.Comparison]
) -> tuple[m.ResidualClass, str] | None:
    hyp = view.hypothesis(variant.hypothesis_id)
    verdicts = {c.verdict for c in rows}
    better, worse = m.Verdict.FASTER, m.Verdict.SLOWER
    if (
        hyp is not None
        and hyp.predicted_direction is not None
        and hyp.predicted_direction is not view.session.contract.metric.direction
    ):
        better, worse = worse, better
    if verdicts == {better}:
        return m.ResidualClass.AS_PREDICTED, "the metric moved the predicted way"
    if worse in verdicts:
        return m.ResidualClass.OPPOSITE_SIGN, "the metric moved against the prediction"
    if verdicts <= {m.Verdict.SAME}:
        return m.ResidualClass.NOTHING_MOVED, "the metric did not move"
    return None


def confirm_residual(
    ledger: Any, view: SessionView, variant: m.Variant, cls: m.ResidualClass, note: str = ""
) -> m.Residual:
    record = _optional("session.residuals", "record_residual")
    confirm = _optional("session.residuals", "confirm_residual")
    if record is not None and confirm is not None:
        residual = view.residual_of(variant.id) or record(ledger, view.session, variant)
        return confirm(ledger, residual, cls, why=note)  # type: ignore[no-any-return]
    rnd = view.last_round
    suggested = suggest_residual(view, variant, ledger) or cls
    r = m.Residual(
        session_id=view.session.id,
        variant_id=variant.id,
        hypothesis_id=variant.hypothesis_id,
        round_id=rnd.id if rnd else None,
        suggested=suggested,
        confirmed=cls,
        note=note,
    )
    ledger.put(r)
    return r


def dispose(
    ledger: Any, session: m.Session, variant: m.Variant, choice: m.DispositionChoice, **fields: Any
) -> m.Disposition:
    real = _optional("session.dispositions", "dispose")
    if real is not None:
        return real(ledger, session, variant, choice, **fields)  # type: ignore[no-any-return]
    problems = gate_problems(ledger, session, variant, choice, **fields)
    if problems:
        raise DispositionRefused("; ".join(problems))
    d = m.Disposition(session_id=session.id, variant_id=variant.id, choice=choice, **fields)
    ledger.put(d)
    return d


class DispositionRefused(Exception):
    """A stand-in refusal, used only while the method's gates are not installed."""

    @property
    def reason(self) -> str:
        return str(self)


def gate_problems(
    ledger: Any, session: m.Session, variant: m.Variant, choice: m.DispositionChoice, **fields: Any
) -> list[str]:
    """What a disposition still lacks (the stand-in gate; the method's gates replace it)."""
    problems: list[str] = []
    keep = choice in (
        m.DispositionChoice.KEEP_DEFAULT,
        m.DispositionChoice.KEEP_GUARDED,
        m.DispositionChoice.KEEP_LOCAL,
    )
    if keep:
        checks = ledger.list(m.CorrectnessResult, session_id=session.id, variant_id=variant.id)
        if not checks:
            problems.append("no correctness result for this variant")
        elif not all(c.passed for c in checks):
            problems.append("its correctness check failed")
        cmps = [c for c in ledger.list(m.Comparison, variant_id=variant.id)]
        if not any(c.verdict is m.Verdict.FASTER for c in cmps):
            problems.append("no round found it faster")
        cls = fields.get("optimization_class")
        if cls is None:
            problems.append("choose its optimization class")
        elif cls in (m.OptimizationClass.C3, m.OptimizationClass.C4) and not fields.get(
            "accepted_semantics"
        ):
            problems.append(f"a {cls.value} change needs your explicit acceptance")
        if choice is m.DispositionChoice.KEEP_GUARDED and not fields.get("guards"):
            problems.append("name the guard or flag")
    if choice is m.DispositionChoice.REJECT and not (fields.get("reason") or "").strip():
        problems.append("say why it is rejected")
    if (
        choice is m.DispositionChoice.NEED_EVIDENCE
        and not (fields.get("reopen_when") or "").strip()
    ):
        problems.append("say what evidence would settle it")
    return problems


def disposition_gates(
    ledger: Any, view: SessionView, variant: m.Variant
) -> dict[m.DispositionChoice, list[str]]:
    """Per choice, what the measurements still lack (the form's own fields aside)."""
    check = _optional("session.gates", "check_disposition")
    suggested = next(
        (c.suggested_class for c in view.correctness_of(variant.id) if c.suggested_class), None
    )
    out: dict[m.DispositionChoice, list[str]] = {}
    for choice in m.DispositionChoice:
        probe: dict[str, Any] = {
            "optimization_class": suggested or m.OptimizationClass.NA,
            "guards": ["(guard)"],
            "fallback": "(fallback)",
            "reason": "(reason)",
            "reopen_when": "(condition)",
            "accepted_semantics": True,
        }
        if check is not None:
            try:
                d = m.Disposition(
                    session_id=view.session.id, variant_id=variant.id, choice=choice, **probe
                )
                out[choice] = list(check(ledger, view.session, d))
                continue
            except Exception:
                pass
        out[choice] = gate_problems(ledger, view.session, variant, choice, **probe)
    return out


# ---------------------------------------------------------------------------- record


def record_markdown(ledger: Any, session: m.Session) -> str:
    from session.record import build_export, to_markdown

    return to_markdown(build_export(ledger, session))


def default_export_dir() -> Any:
    """Where records go unless told: the user data directory, never the user's repository."""
    from pathlib import Path

    import platformdirs

    return Path(platformdirs.user_data_dir("gpuopt", appauthor=False)) / "records"


def export_record(ledger: Any, session: m.Session, directory: Any) -> Any:
    """Write the decision record (markdown and JSON) beside each other; returns the .md path."""
    from pathlib import Path

    from session.record import build_export, to_json, to_markdown

    data = build_export(ledger, session)
    out = Path(directory).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    stem = f"gpuopt-{session.id}"
    md = out / f"{stem}.md"
    for path, text in ((md, to_markdown(data)), (out / f"{stem}.json", to_json(data))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return md
