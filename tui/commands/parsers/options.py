"""Options that several commands' parsers share: --threshold (read by
tui.commands.run_opts.threshold_of) and the --slurm group (read by tui.commands.slurm_opts)."""

from __future__ import annotations

import argparse


def add_threshold(p: argparse.ArgumentParser, what: str, default: str = "the contract's") -> None:
    """The one --threshold option of `new`, `baseline` and `round` (read by threshold_of)."""
    p.add_argument(
        "--threshold",
        metavar="F",
        help=f"{what}, ±F: a fraction or a percentage, e.g. 0.05 or 5%% (default {default})",
    )


def add_slurm_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "Slurm",
        "run it as one Slurm job on one node; the ledger stays here and the job's journal is "
        "imported as it grows (the contract's slurm settings are the defaults)",
    )
    g.add_argument("--slurm", action="store_true", help="submit it with sbatch and follow it")
    g.add_argument("--partition", metavar="P", help="sbatch --partition")
    g.add_argument("--gres", metavar="G", help="sbatch --gres, e.g. gpu:1")
    g.add_argument("--time", metavar="T", help="sbatch --time, e.g. 1:00:00")
    g.add_argument("--account", metavar="A", help="sbatch --account")
    g.add_argument(
        "--sbatch-arg",
        action="append",
        default=[],
        metavar="OPT",
        help="one more sbatch option, as sbatch takes it (repeatable), e.g. --sbatch-arg=--hold",
    )
