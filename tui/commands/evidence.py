"""`gpuopt evidence add|list`: notes, measurements, files and profiler summaries attached to a
hypothesis or a variant."""

from __future__ import annotations

import argparse
import re
from typing import Any

from session.errors import BadInput as UsageError
from tui.commands.common import open_ledger, print_json, session_of

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evidence", help="attach evidence (notes, files, profiles) to a session")
    esub = p.add_subparsers(dest="evidence_command", metavar="ACTION", required=True)
    a = esub.add_parser(
        "add",
        help="attach one piece of evidence",
        description=(
            "Attach evidence to a session, a hypothesis or a variant. Profiler output is "
            "summarized (top kernels by time, throughput percentages), not stored whole: "
            "--ncu-csv reads `ncu --csv --page raw --print-units base` output, "
            "--torch-profile a torch.profiler key_averages().table() printout."
        ),
    )
    a.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    a.add_argument("--hypothesis", metavar="ID", help="the hypothesis it bears on")
    a.add_argument("--variant", metavar="NAME", help="the variant it was measured on")
    a.add_argument("--title", default="", metavar="TEXT", help="a short name for it")
    kind = a.add_mutually_exclusive_group(required=True)
    kind.add_argument("--note", metavar="TEXT", help="an observation in words")
    kind.add_argument(
        "--measurement",
        metavar="NAME=VALUE[UNIT]",
        help="one measured number, e.g. 'peak memory=2.5GiB'",
    )
    kind.add_argument("--file", metavar="PATH", help="a file (path, size and hash are kept)")
    kind.add_argument("--ncu-csv", metavar="PATH", help="Nsight Compute raw CSV to summarize")
    kind.add_argument("--torch-profile", metavar="PATH", help="torch.profiler table to summarize")
    a.add_argument("--json", action="store_true", help="print JSON instead of text")
    a.set_defaults(handler=add)

    ls = esub.add_parser("list", help="the evidence of a session")
    ls.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    ls.add_argument("--json", action="store_true", help="print JSON instead of text")
    ls.set_defaults(handler=list_)


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
    from session import evidence as ev
    from session.api import LedgerError, Session
    from session.hypotheses import HypothesisError, get
    from tui.display import plain

    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        try:
            hid = get(ledger, args.hypothesis, session).id if args.hypothesis else None
            vid = Session(ledger, session.id).variant(args.variant).id if args.variant else None
            links: dict[str, Any] = {"hypothesis_id": hid, "variant_id": vid}
            if args.note is not None:
                e = ev.add_note(ledger, session, args.note, title=args.title, **links)
            elif args.measurement is not None:
                name, value, unit = _measurement(args.measurement)
                e = ev.add_measurement(ledger, session, name, value, unit, **links)
            elif args.file is not None:
                e = ev.add_file(ledger, session, args.file, title=args.title, **links)
            elif args.ncu_csv is not None:
                e = ev.import_ncu_csv(ledger, session, args.ncu_csv, title=args.title, **links)
            else:
                e = ev.import_torch_profile(
                    ledger, session, args.torch_profile, title=args.title, **links
                )
        except (ev.EvidenceError, HypothesisError, LedgerError) as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot read the file: {exc.strerror or exc}") from None
    if args.json:
        print_json(e.model_dump(mode="json"))
    else:
        print(f"{plain(e.id)}  {e.kind.value}  {plain(ev.describe(e))}")
    return 0


def list_(args: argparse.Namespace) -> int:
    from session.api import Session
    from session.evidence import describe
    from tui.display import plain

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
