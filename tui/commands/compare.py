"""`gpuopt compare 'CMD_A' 'CMD_B' ...`: a first look with no session, as hyperfine gives,
with interleaved blocks, paired statistics and the round's stopping rule."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from rich.text import Text

from session.api import (
    BadInput,
    CompareResult,
    across_words,
    compare,
    gpu_commands,
    hyperfine_markdown,
    samples_csv,
    store_comparison,
)
from tui.commands.run_opts import budget_of, interruptible, threshold_of
from tui.display import console as make_console
from tui.display import plain

# Imported at the head: the CLI loads this module only for `gpuopt compare` (tui/cli.py
# dispatches by name). The ledger is not: it is opened only with --ledger, and its
# import (sqlite, pydantic models) would be start-up every other `compare -N` pays.


def run(args: argparse.Namespace) -> int:
    threshold = threshold_of(args)
    args.budget = budget_of(args)
    shell = None if args.no_shell or args.shell == "none" else args.shell
    gpu_list = (args.gpus or "").split(",")
    try:
        commands = gpu_commands(args.commands, gpu_list, args.across_gpus)
    except BadInput as exc:
        raise BadInput(str(exc)) from None
    with interruptible() as stop:
        try:
            result = compare(
                commands,
                warmup=args.warmup,
                min_blocks=args.runs,
                max_blocks=args.max_runs,
                threshold=0.02 if threshold is None else threshold,
                prepare=args.prepare,
                setup=args.setup,
                cleanup=args.cleanup,
                shell=shell,
                seed=args.seed,
                budget_s=args.budget,
                stop=stop,
            )
        except BadInput as exc:
            raise BadInput(str(exc)) from None
    print_result(result)
    if len(args.commands) == 1 and len(set(gpu_list)) > 1 and result.relations:
        rel = result.relations[0]  # the A/A check across two GPUs
        print(plain(across_words(gpu_list, rel.verdict.value, rel.ratio, result.threshold)))
    if getattr(args, "ledger", None):  # only when asked: GPUOPT_LEDGER alone stores nothing
        # Here, not at the head: `compare` without --ledger runs without the ledger and
        # pydantic (tests/cli/test_cli_dispatch.py holds it to that).
        from tui.commands.common import open_ledger

        with open_ledger(args) as ledger:
            session = store_comparison(ledger, result)
        print(f"stored as session {session.id} in {ledger.path}", file=sys.stderr)
    if args.export_json:
        Path(args.export_json).write_text(json.dumps(result.hyperfine(), indent=2) + "\n")
    if args.export_markdown:
        Path(args.export_markdown).write_text(hyperfine_markdown(result))
    if args.export_csv:
        Path(args.export_csv).write_text(samples_csv(result))
    return 130 if stop.is_set() else 0


def _t(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.3f} s"


def print_result(result: CompareResult) -> None:
    r = result
    console = make_console(highlight=False, soft_wrap=True)
    for k, c in enumerate(r.commands, 1):
        user = statistics.fmean(c.user) if c.user else None
        system = statistics.fmean(c.system) if c.system else None
        console.print(Text(f"Benchmark {k}: {plain(c.command, 1000)}", style="bold"))
        console.print(
            Text(
                f"  Time (mean ± σ):   {_t(c.mean)} ± {_t(c.stddev)}    "
                f"[User: {_t(user)}, System: {_t(system)}]"
            )
        )
        console.print(Text(f"  Time (median):     {_t(c.median)}"))
        console.print(
            Text(f"  Range (min … max): {_t(min(c.times))} … {_t(max(c.times))}    {c.runs} runs")
        )
        console.print()
    ref = plain(r.commands[0].command, 1000)
    console.print(Text("Summary", style="bold"))
    for rel in r.relations:
        console.print(Text(f"  {plain(rel.words(ref), 2000)}"), soft_wrap=True)
    console.print(
        Text(
            f"  {r.blocks} interleaved blocks (seed {r.seed}), stopped: {r.stop_reason}; band "
            f"±{r.threshold * 100:.3g}%; verdicts at looks {list(r.design.looks)}, each at "
            f"{r.design.confidence:.1%} (a measurable change at {r.design.change_confidence:.1%})",
            style="dim",
        )
    )
    console.print(Text(f"  {r.shell_words()}", style="dim"))
