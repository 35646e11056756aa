"""`gpuopt profile SESSION [--arm baseline|VARIANT] [--workload NAME]`: where the time and the
bytes of each workload go, in a pass apart from timing, stored as evidence."""

from __future__ import annotations

import argparse
import sys

from session.api import (
    OP_HEAD,
    PAIR_HEAD,
    PROFILE_BASELINE,
    SHARED_HEAD,
    TENSOR_HEAD,
    ProfileError,
    Session,
    check_predictions,
    fact_lines,
    latest_profiles,
    op_rows,
    open_hint,
    pair_rows,
    profile_arm,
    roofline_lines,
    shared_rows,
    shell_advice,
    tensor_rows,
)
from session.api import BadInput as UsageError
from session.api import compare_profiles as compare
from tui.commands.common import open_ledger, print_json, session_of
from tui.display import plain


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    if not rows:
        return
    widths = [max(len(h), *(len(plain(r[i])) for r in rows)) for i, h in enumerate(head)]
    print("  " + "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  " + "  ".join(plain(c).ljust(w) for c, w in zip(r, widths, strict=True)))


def run(args: argparse.Namespace) -> int:
    if args.steps < 1:
        raise UsageError("--steps must be at least 1")
    say = sys.stderr if args.json else sys.stdout  # JSON alone on stdout
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        try:
            runs, others = profile_arm(
                ledger, session, args.arm, args.workload, steps=args.steps,
                progress=lambda line: print(f"· {plain(line)}", file=say, flush=True),
            )  # fmt: skip
        except ProfileError as exc:
            raise UsageError(str(exc)) from None
        key = runs[0].arm if runs else ""
        base = latest_profiles(ledger, session.id, PROFILE_BASELINE) if key != "baseline" else {}
        door = Session(ledger, session.id)
        variant = door.variant(args.arm) if key and key != "baseline" else None
        hyp = None
        if variant is not None and variant.hypothesis_id:
            hyp = door.hypothesis(variant.hypothesis_id)
    if args.json:
        print_json([r.evidence.model_dump(mode="json") for r in runs if r.evidence])
    failed = 0
    for r in runs:
        if r.evidence is None:
            failed += 1
            print(f"{plain(r.workload)}: the profile failed: {plain(r.error)}")
            if r.output_tail:
                print(plain(r.output_tail[-2000:], 2000))
            continue
        if args.json:
            continue
        s = r.evidence.summary
        print(f"\n{plain(r.workload)} — {plain(r.evidence.title)} (evidence {r.evidence.id})")
        for line in fact_lines(s):
            print(f"  {plain(line, 400)}")
        _table(OP_HEAD, op_rows(s, 8))
        _table(TENSOR_HEAD, tensor_rows(s, 8))
        _table(PAIR_HEAD, pair_rows(s))
        _table(SHARED_HEAD, shared_rows(s, 5))
        for line in roofline_lines(s):
            print(f"  {plain(line, 600)}")
        if s.get("trace"):
            print(f"  trace: {plain(open_hint(s['trace']), 600)}")
        if s.get("memory_history"):
            print(f"  CUDA memory history: {plain(s['memory_history'], 600)}")
        if variant is not None:
            b = base.get(r.workload)
            if b is None:
                print("  no baseline profile yet: run `gpuopt profile SESSION` to compare")
                continue
            mv = compare(b.summary, s)
            print("  against the baseline:")
            for line in mv.lines():
                print(f"    {plain(line, 400)}")
            if hyp is not None and hyp.predicted_evidence.strip():
                print(f"  predicted evidence: {plain(hyp.predicted_evidence, 400)}")
                checks = check_predictions(hyp.predicted_evidence, mv, s)
                for c in checks:
                    print(f"    {plain(c.line(), 400)}")
                if not checks:
                    print("    no claim about launches, operators, bytes or intermediates to check")
    advice = shell_advice(others)
    if others and not runs:  # nothing could be profiled here: that is a failure, with why
        for line in advice:
            print(f"gpuopt: {plain(line, 1000)}", file=sys.stderr)
        return 1
    for line in advice:
        print(plain(line, 1000))
    return 1 if failed else 0
