"""`gpuopt variant`: add one-factor variants (a git revision or a patch) and list them."""

from __future__ import annotations

import argparse
import sys

from tui.commands.common import open_ledger, print_json, session_of

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("variant", help="add or list variants (one factor each)")
    vsub = p.add_subparsers(dest="variant_command", metavar="ACTION", required=True)
    add = vsub.add_parser(
        "add",
        help="snapshot a variant from a git revision or a patch on the baseline",
        description=(
            "Snapshot a variant: --ref pins an existing commit (branch, tag, hash); --patch "
            "applies a patch file to the baseline snapshot in a separate worktree. Shows the "
            "diff stat against the baseline snapshot: one factor should look like one."
        ),
    )
    add.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    add.add_argument("--name", required=True, metavar="NAME", help="a short name, no spaces")
    src = add.add_mutually_exclusive_group(required=True)
    src.add_argument("--ref", metavar="GITREF", help="a branch, tag or commit")
    src.add_argument("--patch", metavar="FILE", help="a patch to apply to the baseline snapshot")
    add.add_argument("--hypothesis", metavar="ID", help="the hypothesis this variant tests")
    add.add_argument(
        "--probe",
        action="store_true",
        help="a probe (observes) rather than a change to production behaviour",
    )
    add.add_argument("--json", action="store_true", help="print the variant as JSON")
    add.set_defaults(handler=run_add)
    ls = vsub.add_parser("list", help="list a session's variants")
    ls.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(handler=run_list)


def run_add(args: argparse.Namespace) -> int:
    from session.variants import add_variant, variant_warnings
    from tui.display import plain

    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        # a refusal or bad input exits 2, failed work 1: by their root, in `tui.cli._run`
        variant = add_variant(
            ledger, session, args.name, ref=args.ref, patch=args.patch,
            hypothesis_id=args.hypothesis, probe=args.probe,
        )  # fmt: skip
        warnings = variant_warnings(ledger, session, variant)  # the session layer's words
    for w in warnings:
        print(f"gpuopt: {w.severity}: {plain(w.words())}", file=sys.stderr)
    if args.json:
        print_json(variant.model_dump(mode="json"))
        return 0
    from tui.display import LONG_LIMIT

    kind = "probe" if variant.probe else "change"
    print(f"variant {plain(variant.name)} ({plain(variant.id)}, {kind}) at "
          f"{plain(variant.snapshot.commit[:12])}")  # fmt: skip
    print(f"diff against the baseline snapshot: {variant.files_changed} file(s)")
    for line in plain(variant.diff_stat, LONG_LIMIT, multiline=True).splitlines():
        print(f"  {line}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from session.api import Session

    with open_ledger(args, readonly=True) as ledger:
        session = session_of(ledger, args.session)
        variants = Session(ledger, session.id).variants()
    if args.json:
        print_json([v.model_dump(mode="json") for v in variants])
        return 0
    from rich.table import Table

    from tui.display import console as make_console
    from tui.display import shown

    console = make_console()
    if not variants:
        console.print("No variants yet. Add one with [bold]gpuopt variant add[/].")
        return 0
    table = Table(box=None, header_style="bold")
    for col in ("name", "id", "kind", "snapshot", "files", "hypothesis", "source"):
        table.add_column(col, overflow="fold")
    for v in variants:
        table.add_row(
            shown(v.name), shown(v.id), v.kind.value, shown(v.snapshot.commit[:12]),
            str(v.files_changed), shown(v.hypothesis_id or "—"), shown(v.source),
        )  # fmt: skip
    console.print(table)
    return 0
