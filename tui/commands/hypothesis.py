"""`gpuopt hypothesis add|edit|list|status`: hypotheses written before any edit."""

from __future__ import annotations

import argparse
import sys

from session import models as m
from session.api import (
    AREA_DESCRIPTIONS,
    FIELD_LABELS,
    NEEDS_REOPENING,
    RESIDUAL_DESCRIPTIONS,
    ROUND_SUMMARY_FIELDS,
    GateRefusal,
    LedgerLike,
    Session,
    add_hypothesis,
    draft_round_summary,
    edit_hypothesis,
    estimate_lines,
    hypothesis_text,
    link_variant,
    record_residual,
    set_confidence,
    set_round_summary,
    set_status,
    suggest_for,
    variant_to_link,
)
from session.api import CONCERN_LABELS as LABELS
from session.api import BadInput as UsageError
from session.api import confirm_residual_class as confirm_residual
from session.api import get_hypothesis as get
from session.api import hypothesis_history as history
from tui.commands.common import open_ledger, print_json, session_of
from tui.commands.parsers.hypothesis import SUMMARY_FIELDS, TEXT_FIELDS
from tui.display import LONG_LIMIT, plain


def _fields(args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, _ in TEXT_FIELDS:
        value = getattr(args, name, None)
        if value is not None:
            out[name] = value
    if getattr(args, "predicted_direction", None):
        out["predicted_direction"] = args.predicted_direction
    if getattr(args, "concern_areas", None):
        try:
            out["concern_areas"] = [
                m.ConcernArea(a.replace(" ", "_").replace("-", "_")) for a in args.concern_areas
            ]
        except ValueError as exc:
            raise UsageError(f"--concern: {exc}") from None
    return out


def _print_h(h: m.Hypothesis, history: list[m.HypothesisEvent] | None = None) -> None:
    print(f"{plain(h.id)}  {plain(h.title)}  [{h.status.value}, confidence {h.confidence.value}]")
    for name, label in FIELD_LABELS.items():
        if name in ("status", "confidence"):
            continue
        value = getattr(h, name)
        if isinstance(value, list):  # concern areas: their words, not the stored values
            value = ", ".join(LABELS.get(x, getattr(x, "value", str(x))) for x in value)
        elif hasattr(value, "value"):
            value = value.value
        if value:
            print(f"  {label}: {plain(value, LONG_LIMIT)}")
    for e in history or []:
        print(
            f"  {e.at:%Y-%m-%d %H:%M} {FIELD_LABELS.get(e.field, e.field)}: "
            f"{plain(e.from_value or '—')} → {plain(e.to_value or '—')}  ({plain(e.why)})"
        )


def _precheck_link(ledger: LedgerLike, session: m.Session, variant: str) -> None:
    """Refuse before anything is written when the variant already tests a hypothesis."""
    try:
        variant_to_link(ledger, session, variant)
    except GateRefusal as exc:
        raise UsageError(f"refused: {exc.reason}") from None


def _link(ledger: LedgerLike, session: m.Session, h: m.Hypothesis, variant: str | None) -> None:
    if not variant:
        return

    try:  # a ledger error (no such variant) is bad input by its root: `tui.cli._run` says it
        link_variant(ledger, Session(ledger, session.id).variant(variant), h)
    except GateRefusal as exc:
        raise UsageError(f"refused: {exc.reason}") from None


def add(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        if args.variant:
            _precheck_link(ledger, session, args.variant)
        h, similar = add_hypothesis(
            ledger, session, title=args.title, confidence=args.confidence, **_fields(args)
        )
        _link(ledger, session, h, args.variant)
        suggestions = suggest_for(ledger, session, h)
        # what the baseline's profile (gpuopt profile) bounds it by: Amdahl, fusion bytes
        estimates = estimate_lines(ledger, session, hypothesis_text(h))
    if args.json:
        print_json(
            {
                "hypothesis": h.model_dump(mode="json"),
                "similar_rejected": [
                    {
                        "id": s.id,
                        "session_id": s.session_id,
                        "title": s.title,
                        "status": s.status.value,
                        "reopen_when": s.reopen_when,
                    }
                    for s in similar
                ],
                "concern_suggestions": [
                    {"area": s.area.value, "reason": s.reason} for s in suggestions
                ],
                "profile_estimates": estimates,
            }
        )
        return 0

    print(plain(h.id))
    for line in estimates:
        print(f"gpuopt: from the baseline's profile: {plain(line, 1000)}", file=sys.stderr)
    for s in suggestions:
        print(f"gpuopt: concern area {LABELS[s.area]}: {plain(s.reason, 1000)}", file=sys.stderr)
    for old in similar:
        print(
            f"gpuopt: similar {old.status.value} hypothesis {plain(old.id)} ({plain(old.title)}); "
            f"reopen when: {plain(old.reopen_when or 'not said')}",
            file=sys.stderr,
        )
    return 0


def edit(args: argparse.Namespace) -> int:
    fields = _fields(args)
    if args.title is not None:
        fields["title"] = args.title
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        h = get(ledger, args.hypothesis, session)
        h = edit_hypothesis(ledger, h, why=args.why, **fields)
        _link(ledger, session, h, args.variant)
    if args.json:
        print_json(h.model_dump(mode="json"))
    else:
        _print_h(h)
    return 0


def status(args: argparse.Namespace) -> int:
    if not args.status and not args.confidence:
        raise UsageError("give --status and/or --confidence")
    if not args.why.strip():
        raise UsageError("--why: say which observation changes it")
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        h = get(ledger, args.hypothesis, session)
        reopen = args.reopen_when if args.reopen_when is not None else h.reopen_when
        if args.status == "rejected" and not reopen.strip():  # before any change is written
            raise UsageError(f"{NEEDS_REOPENING} (--reopen-when)")
        if args.confidence:
            h = set_confidence(ledger, h, args.confidence, args.why)
        if args.status:
            h = set_status(ledger, h, args.status, args.why, reopen_when=args.reopen_when)

    print(f"{plain(h.id)}: {h.status.value}, confidence {h.confidence.value}")
    return 0


def list_(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        session = session_of(ledger, args.session)
        hyps = Session(ledger, session.id).hypotheses()
        hist = {h.id: history(ledger, h) for h in hyps}
    if args.json:
        print_json(
            [
                {
                    **h.model_dump(mode="json"),
                    "history": [e.model_dump(mode="json") for e in hist[h.id]],
                }
                for h in hyps
            ]
        )
        return 0
    if not hyps:
        print("No hypotheses yet. Write one with: gpuopt hypothesis add SESSION --title ...")
    for h in hyps:
        _print_h(h, hist[h.id] if args.history else None)
    return 0


def areas(args: argparse.Namespace) -> int:
    for area, text in AREA_DESCRIPTIONS.items():
        print(f"{area.value:<24} {LABELS[area]}: {text}")
    return 0


def residual(args: argparse.Namespace) -> int:
    moved = {"yes": True, "no": False, None: None}[args.mechanism_moved]
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        door = Session(ledger, session.id)
        variant = door.variant(args.variant)
        if variant.hypothesis_id is None and (args.confidence or args.status):
            raise UsageError(f"{variant.name} tests no hypothesis: link one first")
        res = record_residual(ledger, session, variant, mechanism_moved=moved)
        if args.confirm:
            res = confirm_residual(
                ledger, res, args.confirm, confidence=args.confidence, status=args.status,
                why=args.why,
            )  # fmt: skip
        res = door.residual(res.id) or res
    if args.json:
        print_json(res.model_dump(mode="json"))
        return 0

    print(f"suggested: {res.suggested.value} — {RESIDUAL_DESCRIPTIONS[res.suggested]}")
    print(f"  because: {plain(res.note, 2000)}")
    if res.confirmed:
        change = ""
        if res.confidence_from and res.confidence_to:
            change = f"; confidence {res.confidence_from.value} → {res.confidence_to.value}"
        print(f"confirmed: {res.confirmed.value}{change}")
    else:
        print("confirm it with --confirm CLASS (and --confidence / --status / --why)")
    return 0


def summary(args: argparse.Namespace) -> int:
    fields = {
        name: getattr(args, f"summary_{name}")
        for name in SUMMARY_FIELDS
        if getattr(args, f"summary_{name}") is not None
    }
    with open_ledger(args, readonly=not fields) as ledger:
        session = session_of(ledger, args.session)
        rounds = Session(ledger, session.id).rounds()
        if not rounds:
            raise UsageError("no round yet: run one with gpuopt round")
        if args.round is None:
            rnd = rounds[-1]
        else:
            found = [r for r in rounds if str(r.number) == args.round or r.id == args.round]
            if not found:
                raise UsageError(f"no round {args.round!r} in session {session.id}")
            rnd = found[-1]
        if fields:
            rnd = set_round_summary(ledger, rnd, **fields)
        draft = draft_round_summary(ledger, rnd)
    if args.json:
        print_json({"round": rnd.number, "round_id": rnd.id, "summary": draft})
        return 0

    print(f"Round {rnd.number} ({plain(rnd.id)})")
    for key, label in ROUND_SUMMARY_FIELDS.items():
        mark = "" if key in (rnd.summary.get("search_round") or {}) else " (from the ledger)"
        print(f"  {key}: {plain(draft.get(key) or '—', LONG_LIMIT)}{mark}")
        print(f"      {label}")
    return 0
