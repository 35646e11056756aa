"""`gpuopt hypothesis add|edit|list|status`: hypotheses written before any edit."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from session.errors import BadInput as UsageError
from tui.commands.common import open_ledger, print_json, session_of

if TYPE_CHECKING:  # the command module imports only argparse when run: `--help` stays fast
    from session import models as m
    from session.ledger_port import LedgerLike

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).

TEXT_FIELDS = (
    ("symptom", "the measured fact and its scope"),
    ("mechanism", "the mapping, dependency or resource interaction behind it"),
    ("preconditions", "facts that must hold for the mechanism"),
    ("predicted_effect", "expected effect on the target metric, and where"),
    ("predicted_evidence", "counter, trace, IR, allocation or correctness movement expected"),
    ("falsifier", "the cheapest experiment that could prove it wrong"),
    ("confounders", "other explanations and how they are controlled"),
    ("cost", "rough cost and risk of implementing and measuring it"),
    ("confidence_update", "the observation that would change the confidence"),
    ("reopen_when", "what would reopen it once rejected"),
)


RESIDUALS = ("as_predicted", "nothing_moved", "mechanism_only", "metric_only", "opposite_sign")
SUMMARY_FIELDS = (
    "baseline_id",
    "reset_procedure",
    "hypotheses",
    "variants",
    "baseline_check",
    "results",
    "confidence_updates",
    "residuals",
    "disposition",
    "next",
)


def _text_options(p: argparse.ArgumentParser) -> None:
    for name, help_text in TEXT_FIELDS:
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="TEXT", help=help_text)
    p.add_argument(
        "--direction",
        dest="predicted_direction",
        choices=("lower", "higher"),
        help="the way the metric should move",
    )
    p.add_argument(
        "--concern",
        action="append",
        dest="concern_areas",
        metavar="AREA",
        help="a concern area (repeat); see `gpuopt hypothesis areas`",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hypothesis", help="write, edit, list hypotheses; change their status")
    hsub = p.add_subparsers(dest="hypothesis_command", metavar="ACTION", required=True)

    a = hsub.add_parser("add", help="write a hypothesis (before editing code)")
    a.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    a.add_argument("--title", required=True, metavar="TEXT", help="a short name for it, one line")
    _text_options(a)
    a.add_argument(
        "--confidence",
        choices=("low", "medium", "high"),
        default="medium",
        help="how much you trust it before measuring (medium)",
    )
    a.add_argument("--variant", metavar="NAME", help="link a variant that tests it")
    a.add_argument("--json", action="store_true", help="print JSON instead of text")
    a.set_defaults(handler=add)

    e = hsub.add_parser("edit", help="change the text of a hypothesis (kept in its history)")
    e.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    e.add_argument("hypothesis", metavar="ID", help="hypothesis id or a unique prefix")
    e.add_argument("--title", metavar="TEXT", help="a new short name")
    _text_options(e)
    e.add_argument("--variant", metavar="NAME", help="link a variant that tests it")
    e.add_argument("--why", default="", metavar="TEXT", help="why it changes")
    e.add_argument("--json", action="store_true", help="print JSON instead of text")
    e.set_defaults(handler=edit)

    s = hsub.add_parser("status", help="change status and/or confidence, with the reason")
    s.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    s.add_argument("hypothesis", metavar="ID", help="hypothesis id or a unique prefix")
    s.add_argument(
        "--status",
        choices=("proposed", "supported", "weakened", "rejected", "reopenable"),
        help="the new status (rejected needs --reopen-when)",
    )
    s.add_argument("--confidence", choices=("low", "medium", "high"), help="the new confidence")
    s.add_argument("--why", required=True, metavar="TEXT", help="the observation behind it")
    s.add_argument(
        "--reopen-when",
        dest="reopen_when",
        metavar="TEXT",
        help="what would reopen it (needed to reject)",
    )
    s.set_defaults(handler=status)

    ls = hsub.add_parser("list", help="the hypotheses of a session")
    ls.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    ls.add_argument("--history", action="store_true", help="show each one's history")
    ls.add_argument("--json", action="store_true", help="print JSON instead of text")
    ls.set_defaults(handler=list_)

    ar = hsub.add_parser("areas", help="the concern areas and what each covers")
    ar.set_defaults(handler=areas)

    rs = hsub.add_parser(
        "residual",
        help="read how a variant's result differs from its hypothesis's prediction",
        description=(
            "Suggest the residual class of a variant from its comparisons and audits (and "
            "record it); with --confirm, record your reading and the confidence change it "
            "brings to the hypothesis. Classes: " + ", ".join(RESIDUALS) + "."
        ),
    )
    rs.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    rs.add_argument("variant", metavar="VARIANT", help="variant name or id")
    rs.add_argument(
        "--mechanism-moved",
        choices=("yes", "no"),
        help="your reading of mechanism evidence the audits do not cover",
    )
    rs.add_argument("--confirm", choices=RESIDUALS, help="the class you confirm")
    rs.add_argument(
        "--confidence",
        choices=("low", "medium", "high"),
        help="the hypothesis's confidence after this result",
    )
    rs.add_argument(
        "--status",
        choices=("proposed", "supported", "weakened", "rejected", "reopenable"),
        help="the hypothesis's new status",
    )
    rs.add_argument("--why", default="", metavar="TEXT", help="the observation, in words")
    rs.add_argument("--json", action="store_true", help="print JSON instead of text")
    rs.set_defaults(handler=residual)

    sm = hsub.add_parser(
        "summary",
        help="show or write the summary of a round (the search-round fields)",
    )
    sm.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    sm.add_argument("round", metavar="ROUND", nargs="?", help="round number (default: last)")
    for name in SUMMARY_FIELDS:
        sm.add_argument(f"--{name.replace('_', '-')}", dest=f"summary_{name}", metavar="TEXT",
                        help=f"the summary's {name.replace('_', ' ')} field, in words")  # fmt: skip
    sm.add_argument("--json", action="store_true", help="print JSON instead of text")
    sm.set_defaults(handler=summary)


def _fields(args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, _ in TEXT_FIELDS:
        value = getattr(args, name, None)
        if value is not None:
            out[name] = value
    if getattr(args, "predicted_direction", None):
        out["predicted_direction"] = args.predicted_direction
    if getattr(args, "concern_areas", None):
        from session import models as m

        try:
            out["concern_areas"] = [
                m.ConcernArea(a.replace(" ", "_").replace("-", "_")) for a in args.concern_areas
            ]
        except ValueError as exc:
            raise UsageError(f"--concern: {exc}") from None
    return out


def _print_h(h: m.Hypothesis, history: list[m.HypothesisEvent] | None = None) -> None:
    from session.concerns import LABELS
    from session.hypotheses import FIELD_LABELS
    from tui.display import LONG_LIMIT, plain

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
    from session.gates import GateRefusal
    from session.hypotheses import variant_to_link

    try:
        variant_to_link(ledger, session, variant)
    except GateRefusal as exc:
        raise UsageError(f"refused: {exc.reason}") from None


def _link(ledger: LedgerLike, session: m.Session, h: m.Hypothesis, variant: str | None) -> None:
    if not variant:
        return
    from session.api import Session
    from session.gates import GateRefusal
    from session.hypotheses import link_variant

    try:  # a ledger error (no such variant) is bad input by its root: `tui.cli._run` says it
        link_variant(ledger, Session(ledger, session.id).variant(variant), h)
    except GateRefusal as exc:
        raise UsageError(f"refused: {exc.reason}") from None


def add(args: argparse.Namespace) -> int:
    from session.concerns import LABELS, suggest_for
    from session.hypotheses import add_hypothesis
    from session.profile.record import estimate_lines, hypothesis_text

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
    from tui.display import plain

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
    from session.hypotheses import edit_hypothesis, get

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
    from session.hypotheses import NEEDS_REOPENING, get, set_confidence, set_status

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
    from tui.display import plain

    print(f"{plain(h.id)}: {h.status.value}, confidence {h.confidence.value}")
    return 0


def list_(args: argparse.Namespace) -> int:
    from session.api import Session
    from session.hypotheses import history

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
    from session.concerns import DESCRIPTIONS, LABELS

    for area, text in DESCRIPTIONS.items():
        print(f"{area.value:<24} {LABELS[area]}: {text}")
    return 0


def residual(args: argparse.Namespace) -> int:
    from session.api import Session
    from session.residuals import DESCRIPTIONS, confirm_residual, record_residual

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
    from tui.display import plain

    print(f"suggested: {res.suggested.value} — {DESCRIPTIONS[res.suggested]}")
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
    from session.api import Session
    from session.residuals import ROUND_SUMMARY_FIELDS, draft_round_summary, set_round_summary

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
    from tui.display import LONG_LIMIT, plain

    print(f"Round {rnd.number} ({plain(rnd.id)})")
    for key, label in ROUND_SUMMARY_FIELDS.items():
        mark = "" if key in (rnd.summary.get("search_round") or {}) else " (from the ledger)"
        print(f"  {key}: {plain(draft.get(key) or '—', LONG_LIMIT)}{mark}")
        print(f"      {label}")
    return 0
