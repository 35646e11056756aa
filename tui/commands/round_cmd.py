"""`gpuopt round`: measure the baseline and variants together, interleaved, until decided."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from session import models as m
from session.api import (
    VERDICT_STYLE,
    BadInput,
    ConductError,
    GateRefused,
    Session,
    WorkFailed,
    baseline_floors,
    check_workloads,
    error_tail,
    gate_round,
    metric_legend,
    resolve_variants,
    run_round,
)
from session.api import BadInput as UsageError
from session.verdicts import (
    ShownVerdict,
    ci_heading,
    ci_legend,
    interval_confidence,
    shown_verdict,
)
from tui.commands.common import open_ledger, print_json, session_of
from tui.commands.run_opts import (
    budget_of,
    engine_monitor,
    interruptible,
    progress_display,
    ratio_cells,
    threshold_of,
)
from tui.commands.slurm_opts import catch_up, run_as_job, slurm_given
from tui.display import console as make_console
from tui.display import plain, shown

_FAILED_VERDICTS = ("FAILED", "BROKEN")


def print_failures(console: Any, comparisons: list[Any], names: dict[str, str]) -> None:
    """Each FAILED/BROKEN arm in words under the table: its note and its exception's end."""
    for c in comparisons:
        if c.verdict.value not in _FAILED_VERDICTS:
            continue
        name = names.get(c.variant_id, c.variant_id)
        head = Text.assemble(
            (c.verdict.value, "red bold"), " ", shown(name), "/", shown(c.workload)
        )
        if c.note:
            head.append(": ")
            head.append(shown(c.note, 2000))
        console.print(head, soft_wrap=True)
        for line in plain(error_tail(c.error), 4000, multiline=True).splitlines():
            console.print(Text(f"    {line}", style="dim"), soft_wrap=True)


def print_undecided(
    console: Any, comparisons: list[Any], names: dict[str, str], seen: list[ShownVerdict]
) -> None:
    """What each INCONCLUSIVE comparison would need, with the smallest effect it resolves,
    where more blocks could still decide it (`seen`: the rows' verdicts as shown)."""
    for c, verdict in zip(comparisons, seen, strict=True):
        word = c.verdict.value
        note = verdict.note_shown
        if word not in ("INCONCLUSIVE", "MEASURABLE") or not note:
            continue  # a MEASURABLE beyond the band says what would clear it
        name = names.get(c.variant_id, c.variant_id)
        console.print(Text.assemble((word, VERDICT_STYLE[word]), " ", shown(name), "/",
                                    shown(c.workload), ": ", shown(note, 2000)),
                      soft_wrap=True)  # fmt: skip


# ---------------------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> int:
    variants = [v for v in (args.variants or "").split(",") if v.strip()] or None
    check_options(args)
    with open_ledger(args) as ledger:
        session = session_of(ledger, args.session)
        catch_up(ledger, session)  # finished Slurm jobs no one followed to their end
        door = Session(ledger, session.id)
        names = {v.id: v.name for v in door.variants()}
        try:  # refuse before any telemetry starts
            gate_round(ledger, session, args.threshold)
            check_workloads(session)
            resolve_variants(ledger, session, variants)
        except (GateRefused, BadInput) as exc:
            raise UsageError(str(exc)) from None
        if slurm_given(args):  # one job on one node, followed from here
            return round_job(args, ledger, session, names, variants)
        with (
            engine_monitor(
                ledger, session.id, not args.no_telemetry, session.contract.gpu
            ) as monitor,
            interruptible() as stop,
            progress_display("round", names) as show,
        ):
            try:
                rnd = run_round(
                    ledger, session, variants=variants, min_blocks=args.min_blocks,
                    max_blocks=args.max_blocks, threshold=args.threshold, budget_s=args.budget,
                    seed=args.seed, progress=show, stop=stop, monitor=monitor,
                    keep_outputs=args.keep_outputs,
                )  # fmt: skip
            except (GateRefused, BadInput) as exc:
                raise UsageError(str(exc)) from None
            except ConductError as exc:
                raise WorkFailed(str(exc)) from None
            except KeyboardInterrupt:
                print("gpuopt: round interrupted; completed runs are kept", file=sys.stderr)
                return 130
        comparisons = door.comparisons(rnd.id)
        corrects = door.correctness()
        floors = baseline_floors(ledger, session.id)
    return report_round(args, rnd, comparisons, corrects, names, session, floors=floors)


def report_round(
    args: argparse.Namespace,
    rnd: Any,
    comparisons: list[Any],
    corrects: list[Any],
    names: dict[str, str],
    session: Any,
    extra: dict[str, Any] | None = None,
    floors: Mapping[str, Any] | None = None,
) -> int:
    """A round's table (or JSON, with `extra` keys) and its exit status, for a round run
    here and one run as a Slurm job alike. `floors` (workload -> the roofline floor of the
    baseline's profile, session.profile.run.baseline_floors) are read from the ledger when
    not given: a time below its floor never reads FASTER."""
    if floors is None:
        floors = _floors(args, session)
    if args.json:
        shown = {c.id: shown_verdict(c, corrects, rnd, floors.get(c.workload))
                 for c in comparisons}  # fmt: skip
        print_json({
            "round": rnd.model_dump(mode="json"),
            **(extra or {}),
            "comparisons": [
                {**c.model_dump(mode="json"), "variant": names.get(c.variant_id, c.variant_id),
                 **shown[c.id].fields(), "below_floor": shown[c.id].below_floor,
                 "second_look": shown[c.id].caution}
                for c in comparisons
            ],
        })  # fmt: skip
    else:
        print_round(rnd, comparisons, names, session, corrects, floors)
    if rnd.status is m.RoundStatus.INTERRUPTED:
        print("gpuopt: round interrupted; completed runs are kept", file=sys.stderr)
        return 130
    return 1 if rnd.status is m.RoundStatus.FAILED else 0


def _floors(args: argparse.Namespace, session: Any) -> Mapping[str, Any]:
    """The baseline's roofline floors, from the ledger `args` names (read only)."""
    with open_ledger(args, readonly=True) as ledger:
        return baseline_floors(ledger, session.id)


def check_options(args: argparse.Namespace) -> None:
    """Refuse impossible options by name, before any worktree or telemetry starts."""
    args.threshold = threshold_of(args)
    if args.min_blocks < 2:
        raise UsageError(f"--min-blocks {args.min_blocks}: a round needs at least 2 blocks")
    if args.max_blocks < args.min_blocks:
        raise UsageError(
            f"--max-blocks {args.max_blocks} is below --min-blocks {args.min_blocks}: "
            "raise it or lower --min-blocks"
        )
    args.budget = budget_of(args)


def print_round(
    rnd: Any,
    comparisons: list[Any],
    names: dict[str, str],
    session: Any,
    corrects: Sequence[Any] = (),
    floors: Mapping[str, Any] | None = None,
) -> None:
    """The round table: the verdict a reviewer should see (session.verdicts: BROKEN when
    the check failed, marked untrusted when the round or its runs are, INCONCLUSIVE below
    the workload's roofline floor in `floors`, a second look asked over 10× faster)."""
    console = make_console(highlight=False, soft_wrap=True)
    if not console.is_terminal:  # piped or logged: no 80-column guess cutting numbers to "…"
        console.width = max(console.width, 160)
    s = rnd.summary
    checks = s.get("checks") or {}
    why = s.get("stop_reason")
    state = rnd.status.value
    if state == "completed" and why == "budget":
        state = "stopped at its time budget"
    blocks = f"{rnd.blocks} block{'' if rnd.blocks == 1 else 's'}"
    console.print(
        Text(
            f"Round {rnd.number} ({plain(rnd.id)}): {state}, {blocks}, "
            f"seed {rnd.seed}, threshold {rnd.threshold:.1%}, baseline {plain(rnd.baseline_id)}"
        )
    )
    if why:
        said = {"budget": "another block would run past --budget"}.get(why, why)
        console.print(Text(f"stopped: {plain(said)}"))
    if rnd.blocks < rnd.min_blocks:
        hint = " with a larger --budget" if s.get("stop_reason") == "budget" else ""
        console.print(
            f"[yellow]{rnd.blocks} of at least {rnd.min_blocks} blocks: the verdicts are early "
            f"and no variant can be kept on them; run a full round{hint}[/]"
        )
    table = Table(header_style="bold")
    ci_col = ci_heading(comparisons)
    for col in ("variant", "workload", "blocks", "ratio", ci_col, "verdict", "more blocks"):
        table.add_column(
            col, justify="right" if col in ("blocks", "ratio", "more blocks") else "left"
        )
    cautions = []
    verdicts = []
    for c in comparisons:
        ratio, ci = ratio_cells(c, ci_col)
        seen = shown_verdict(c, corrects, rnd, (floors or {}).get(c.workload))
        verdicts.append(seen)
        if seen.below_floor:  # the cell wraps: the whole sentence goes under the table
            cautions.append((c, "below the floor", seen.words))
        elif seen.caution:
            cautions.append((c, "second look", seen.caution))
        extra = []
        if c.untrusted_runs:
            extra.append(f"{c.untrusted_runs} quarantined")
        if c.failed_runs:
            extra.append(f"{c.failed_runs} failed")
        verdict = Text(seen.text, style=VERDICT_STYLE.get(seen.word, "white"))
        if extra:
            verdict.append(f" ({', '.join(extra)})")
        more = "" if seen.more_blocks is None else f"~{seen.more_blocks}"
        table.add_row(shown(names.get(c.variant_id, c.variant_id)), shown(c.workload), str(c.n),
                      ratio, ci, verdict, more)  # fmt: skip
    console.print(table)
    print_failures(console, comparisons, names)
    print_undecided(console, comparisons, names, verdicts)
    for c, what, caution in cautions:
        console.print(Text.assemble((what, "yellow bold"), " ",
                                    shown(names.get(c.variant_id, c.variant_id)), "/",
                                    shown(c.workload), ": ", shown(caution, 2000)),
                      soft_wrap=True)  # fmt: skip
    design = s.get("design") or {}
    if design.get("looks"):
        looks = ", ".join(str(k) for k in design["looks"])
        console.print(
            Text(
                f"stopping rule: looks at blocks {looks}, each at {design['confidence']:.2%} "
                f"confidence (any interval missing at most {design['alpha']:.0%} over the "
                "round)",
                style="dim",
            )
        )
    if comparisons:
        levels = {interval_confidence(c) for c in comparisons}
        console.print(Text("; ".join(ci_legend(c) for c in sorted(levels)), style="dim"))
    metric = metric_legend(session.contract)
    if session.contract.metric.direction.value == "higher":
        legend = (f"ratio = baseline / variant of {metric} (higher is better, so the ratio is "
                  "inverted: below 1 means better either way)")  # fmt: skip
    else:
        legend = f"ratio = variant / baseline of {metric} (lower is better: below 1 means better)"
    console.print(Text(plain(legend, None), style="dim"))
    if rnd.baseline_check is not None:
        ok = ("reproduced", "") if rnd.baseline_reproduced else ("NOT reproduced", "red")
        console.print(
            Text.assemble(f"baseline check: {rnd.baseline_check:.4f}× its reference, ", ok)
        )
    for name, passed in checks.items():
        console.print(Text.assemble(f"check {plain(name)}: ", ("passed", "green") if passed
                                    else ("FAILED", "red")))  # fmt: skip
    for note in s.get("notes") or []:
        console.print(Text.assemble(("note", "yellow"), ": ", shown(note, 2000)), soft_wrap=True)


def round_job(
    args: argparse.Namespace, ledger: Any, session: Any, names: dict[str, str], variants: Any
) -> int:
    """`gpuopt round --slurm`: the round as a job; its table as a local round's."""
    slurm_given(args)
    options = {"variants": variants, "min_blocks": args.min_blocks, "max_blocks": args.max_blocks,
               "threshold": args.threshold, "budget_s": args.budget, "seed": args.seed}  # fmt: skip
    with progress_display("round", names) as show:
        result = run_as_job(args, ledger, session, "round", options, show)
    rnd = result.round
    if rnd is None:
        raise WorkFailed(f"the Slurm job {result.job.job_id} left no round: {result.error}")
    if result.error:
        print(f"gpuopt: the job failed: {plain(result.error, 2000)}", file=sys.stderr)
    door = Session(ledger, session.id)
    comparisons = door.comparisons(rnd.id)
    corrects = door.correctness()
    job = {**result.job.record(), "state": result.state.state if result.state else None}
    return report_round(args, rnd, comparisons, corrects, names, session, {"job": job})
