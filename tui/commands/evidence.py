"""`gpuopt evidence add|list`: notes, measurements, files and profiler summaries attached to a
hypothesis or a variant."""

from __future__ import annotations

import argparse
import re
from typing import Any

from session.api import BadInput as UsageError
from session.api import (
    EvidenceError,
    HypothesisError,
    LedgerError,
    Session,
    add_file,
    add_measurement,
    add_note,
    import_ncu_csv,
    import_torch_profile,
)
from session.api import describe_evidence as describe
from session.api import get_hypothesis as get
from tui.commands.common import open_ledger, print_json, session_of
from tui.display import plain


def _measurement(spec: str) -> tuple[str, float, str]:
    name, sep, rest = spec.partition("=")
    match = re.fullmatch(r"\s*([-+0-9.,eE]+)\s*(.*)", rest)
    if not sep or not name.strip() or not match:
        raise UsageError(f"--measurement {spec!r}: write it as NAME=VALUE[UNIT]")
    try:
        value = float(match.group(1).replace(",", ""))
    except ValueError:
        raise UsageError(f"--measurement {spec!r}: {match.group(1)!r} is not a number") from None
    return name.strip(), value, match.group(2).strip()


def add(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        try:
            hid = get(ledger, args.hypothesis, session).id if args.hypothesis else None
            vid = Session(ledger, session.id).variant(args.variant).id if args.variant else None
            links: dict[str, Any] = {"hypothesis_id": hid, "variant_id": vid}
            if args.note is not None:
                e = add_note(ledger, session, args.note, title=args.title, **links)
            elif args.measurement is not None:
                name, value, unit = _measurement(args.measurement)
                e = add_measurement(ledger, session, name, value, unit, **links)
            elif args.file is not None:
                e = add_file(ledger, session, args.file, title=args.title, **links)
            elif args.ncu_csv is not None:
                e = import_ncu_csv(ledger, session, args.ncu_csv, title=args.title, **links)
            else:
                e = import_torch_profile(
                    ledger, session, args.torch_profile, title=args.title, **links
                )
        except (EvidenceError, HypothesisError, LedgerError) as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot read the file: {exc.strerror or exc}") from None
    if args.json:
        print_json(e.model_dump(mode="json"))
    else:
        print(f"{plain(e.id)}  {e.kind.value}  {plain(describe(e))}")
    return 0


def list_(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        session = session_of(ledger, args.session)
        rows = Session(ledger, session.id).evidence()
    if args.json:
        print_json([e.model_dump(mode="json") for e in rows])
        return 0
    for e in rows:
        links = " ".join(
            x
            for x in (
                e.hypothesis_id and f"h:{e.hypothesis_id}",
                e.variant_id and f"v:{e.variant_id}",
            )
            if x
        )
        print(
            f"{plain(e.id)}  {e.kind.value:<13} {plain(links):<30} {plain(e.title)} — "
            f"{plain(describe(e))}"
        )
    return 0
