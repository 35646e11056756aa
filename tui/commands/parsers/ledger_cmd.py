"""The parser of `gpuopt ledger`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.ledger_cmd, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ledger", help="check, back up, merge or locate the ledger file")
    lsub = p.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    c = lsub.add_parser("check", help="integrity, foreign-key and row check, row counts")
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(handler="tui.commands.ledger_cmd:check")
    b = lsub.add_parser("backup", help="write a consistent copy (VACUUM INTO)")
    b.add_argument("target", metavar="FILE", help="the new file to write (must not exist)")
    b.set_defaults(handler="tui.commands.ledger_cmd:backup")
    g = lsub.add_parser(
        "merge",
        help="merge other boxes' ledgers into one (rows keep their ids; conflicts reported)",
        description="Copy every row of each LEDGER that the target lacks into the target "
        "(the -o file, created when missing, else the ledger in use). Rows keep their ids and "
        "numbers; a session in several ledgers merges by id; a record two ledgers hold with "
        "different content is reported as a conflict and the target's is kept. Merging the "
        "same ledger again changes nothing. The sources are only read. Exit 1 on a conflict.",
    )
    g.add_argument("sources", nargs="+", metavar="LEDGER", help="ledger files to merge in")
    g.add_argument("-o", "--output", metavar="FILE", help="the ledger to merge into")
    g.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
    g.add_argument("--json", action="store_true", help="print JSON")
    g.set_defaults(handler="tui.commands.ledger_cmd:merge")
    w = lsub.add_parser("path", help="print the ledger path in use")
    w.set_defaults(handler="tui.commands.ledger_cmd:path")
    a = lsub.add_parser(
        "prune-artifacts",
        help="delete saved correctness outputs no stored check refers to",
        description="Delete the folders under <ledger>.artifacts/ that no stored correctness "
        "result names (or all of them, with --all), and say how much that frees. Folders "
        "written in the last 15 minutes are kept: a running check may not have stored its "
        "result yet.",
    )
    a.add_argument("--all", action="store_true", help="delete every artifact folder")
    a.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")
    a.set_defaults(handler="tui.commands.ledger_cmd:prune_artifacts")
    r = lsub.add_parser(
        "prune-refs",
        help="delete snapshot refs no session of the ledger uses",
        description="List the snapshot refs (refs/gpuopt/snapshots/) of a repository that "
        "no baseline or variant of this ledger names, then delete them; each is printed "
        "with its commit, so `git update-ref REF COMMIT` puts it back. Refs pinned in the "
        "last 15 minutes are kept: their baseline or variant may be being recorded. A ref "
        "another ledger's session uses looks unused here: prune with every ledger in mind.",
    )
    r.add_argument(
        "--repo", metavar="PATH", default=".", help="the repository (default: this directory)"
    )
    r.add_argument("--dry-run", action="store_true", help="list them; delete nothing")
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(handler="tui.commands.ledger_cmd:prune_refs")
