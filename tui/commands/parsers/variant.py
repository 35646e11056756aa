"""The parser of `gpuopt variant`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.variant, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse


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
    add.set_defaults(handler="tui.commands.variant:run_add")
    ls = vsub.add_parser("list", help="list a session's variants")
    ls.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(handler="tui.commands.variant:run_list")
