"""`gpuopt preflight SESSION`: show and answer the preflight (six questions, the checklist,
the bottleneck class)."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from session import models as m
from session.api import (
    CHECKLIST,
    PreflightView,
    preflight_checklist,
    preflight_view,
    set_answer,
    set_bottleneck,
    set_checklist,
)
from session.api import QUESTIONS as QUESTION_TEXTS
from session.api import BadInput as UsageError
from tui.commands.common import open_ledger, print_json, session_of
from tui.commands.parsers.preflight import QUESTIONS
from tui.display import LONG_LIMIT, plain


def _pair(spec: str, flag: str) -> tuple[str, str]:
    key, sep, value = spec.partition("=")
    if not sep:
        raise UsageError(f"{flag} {spec!r}: write it as KEY=VALUE")
    return key.strip(), value


def _question(name: str, flag: str) -> str:
    q = name.strip().lower()
    if q not in QUESTIONS:
        raise UsageError(f"{flag}: no question {name!r}; questions are {', '.join(QUESTIONS)}")
    return q


def _number(text: str, flag: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{flag}: {text!r} is not an item number (1-{len(CHECKLIST)})") from None


def run(args: argparse.Namespace) -> int:
    evidence = {}
    for spec in args.evidence:
        q, ev = _pair(spec, "--evidence")
        evidence[_question(q, "--evidence")] = ev.strip()
    writes: list[tuple[str, str, str, str | None]] = []  # question, kind, text, area
    for spec in args.measured:
        q, text = _pair(spec, "--measured")
        writes.append((_question(q, "--measured"), "measured", text, None))
    for q in set(evidence) - {w[0] for w in writes}:
        writes.append((q, "measured", "", None))
    for spec in args.hand_off:
        q, rest = _pair(spec, "--hand-off")
        area, _, text = rest.partition(":")
        area = area.strip().replace("-", "_").replace(" ", "_")
        if area not in {a.value for a in m.ConcernArea}:
            raise UsageError(f"--hand-off: no concern area {area!r} (see gpuopt hypothesis areas)")
        writes.append((_question(q, "--hand-off"), "handed_off", text, area))
    for spec in args.not_applicable:
        q, why = _pair(spec, "--not-applicable")
        writes.append((_question(q, "--not-applicable"), "not_applicable", why, None))
    for q in args.unknown:
        writes.append((_question(q, "--unknown"), "unknown", "", None))
    done: dict[int, str | None] = {}
    for spec in args.done:
        n, sep, note = spec.partition("=")
        done[_number(n, "--done")] = note if sep else None
    notes = {}
    for spec in args.note:
        n, text = _pair(spec, "--note")
        notes[_number(n, "--note")] = text
    changing = writes or done or args.undone or notes or args.bottleneck
    with open_ledger(args, readonly=not changing) as ledger:
        session = session_of(ledger, args.session)
        try:
            for q, kind, answer, to_area in writes:
                set_answer(
                    ledger,
                    session,
                    q,
                    kind,
                    answer,
                    evidence_id=evidence.get(q),
                    concern_area=to_area,
                )
            for n, note in done.items():
                set_checklist(
                    ledger, session, n, True, note if note is not None else notes.pop(n, None)
                )
            for n in args.undone:
                set_checklist(ledger, session, n, False, notes.pop(n, None))
            for n, text in notes.items():  # a note alone keeps the item's mark
                marks = {c.number: c.done for c in preflight_checklist(ledger, session)}
                set_checklist(ledger, session, n, marks.get(n, False), text)
            if args.bottleneck:
                set_bottleneck(ledger, session, args.bottleneck, args.bottleneck_evidence or "")
        # (a PreflightError is bad input by its root: `tui.cli._run` says it, exit 2)
        except ValidationError as exc:
            msgs = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
            raise UsageError(msgs) from None
        view = preflight_view(ledger, session)
    if args.json:
        print_json(view.as_dict())
        return 0
    _show(view)
    return 0


def _show(v: PreflightView) -> None:
    print(
        f"Bottleneck: {v.bottleneck.value}"
        + (f" — {plain(v.bottleneck_evidence, LONG_LIMIT)}" if v.bottleneck_evidence else "")
    )
    print()
    for a in v.answers:
        kind = a.kind.value.replace("_", " ")
        extra = []
        if a.concern_area:
            extra.append(f"→ {a.concern_area.value.replace('_', ' ')}")
        if a.evidence_id:
            extra.append(f"evidence {plain(a.evidence_id)}")
        if a.text:
            extra.append(plain(a.text, LONG_LIMIT))
        print(f"{a.question.value:<10} {kind:<15} {' · '.join(extra)}")
        print(f"           {QUESTION_TEXTS[a.question]}")
    print()
    for c in v.checklist:
        mark = "x" if c.done else " "
        note = f"  — {plain(c.note, LONG_LIMIT)}" if c.note else ""
        print(f"[{mark}] {c.number:>2}. {CHECKLIST[c.number]}{note}")
    if v.unknown:
        print()
        print(f"Unknown: {', '.join(plain(u) for u in v.unknown)} (raised again at disposition)")
