"""The parser of `gpuopt hypothesis`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.hypothesis, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse

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
    a.set_defaults(handler="tui.commands.hypothesis:add")

    e = hsub.add_parser("edit", help="change the text of a hypothesis (kept in its history)")
    e.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    e.add_argument("hypothesis", metavar="ID", help="hypothesis id or a unique prefix")
    e.add_argument("--title", metavar="TEXT", help="a new short name")
    _text_options(e)
    e.add_argument("--variant", metavar="NAME", help="link a variant that tests it")
    e.add_argument("--why", default="", metavar="TEXT", help="why it changes")
    e.add_argument("--json", action="store_true", help="print JSON instead of text")
    e.set_defaults(handler="tui.commands.hypothesis:edit")

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
    s.set_defaults(handler="tui.commands.hypothesis:status")

    ls = hsub.add_parser("list", help="the hypotheses of a session")
    ls.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    ls.add_argument("--history", action="store_true", help="show each one's history")
    ls.add_argument("--json", action="store_true", help="print JSON instead of text")
    ls.set_defaults(handler="tui.commands.hypothesis:list_")

    ar = hsub.add_parser("areas", help="the concern areas and what each covers")
    ar.set_defaults(handler="tui.commands.hypothesis:areas")

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
    rs.set_defaults(handler="tui.commands.hypothesis:residual")

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
    sm.set_defaults(handler="tui.commands.hypothesis:summary")
