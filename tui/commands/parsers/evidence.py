"""The parser of `gpuopt evidence`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.evidence, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse


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
    a.set_defaults(handler="tui.commands.evidence:add")

    ls = esub.add_parser("list", help="the evidence of a session")
    ls.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    ls.add_argument("--json", action="store_true", help="print JSON instead of text")
    ls.set_defaults(handler="tui.commands.evidence:list_")
