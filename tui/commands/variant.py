"""`gpuopt variant`: add one-factor variants (a git revision or a patch) and list them."""

from __future__ import annotations

import argparse
import sys

from rich.table import Table

from session.api import Session, add_variant, variant_warnings
from tui.commands.common import open_ledger, print_json, session_of
from tui.display import LONG_LIMIT, plain, shown
from tui.display import console as make_console


def run_add(args: argparse.Namespace) -> int:
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

    kind = "probe" if variant.probe else "change"
    print(f"variant {plain(variant.name)} ({plain(variant.id)}, {kind}) at "
          f"{plain(variant.snapshot.commit[:12])}")  # fmt: skip
    print(f"diff against the baseline snapshot: {variant.files_changed} file(s)")
    for line in plain(variant.diff_stat, LONG_LIMIT, multiline=True).splitlines():
        print(f"  {line}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        session = session_of(ledger, args.session)
        variants = Session(ledger, session.id).variants()
    if args.json:
        print_json([v.model_dump(mode="json") for v in variants])
        return 0

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
