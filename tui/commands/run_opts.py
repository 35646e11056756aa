"""What the commands that measure share: --threshold and --budget read as fractions and
seconds, telemetry for an engine's runs, Ctrl+C as a clean stop, and the live progress
they show on stderr (`round`, `baseline`, `compare`, `bisect`, `job` and their Slurm jobs).

Imports at the head, but for the ledger and telemetry that `engine_monitor` needs:
`compare` uses this module and runs without a ledger.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from session.api import (
    MIN_THRESHOLD,
    band,
    eta_text,
    out_of_range,
    range_of,
    ratio_text,
    verdict_style,
)
from session.api import BadInput as UsageError
from session.verdicts import ci_cell, ci_heading, shown_verdict
from tui.display import console as make_console
from tui.display import plain, shown

# An ASCII decimal, as typed: float() would also read "1_0" as 10 and "٥" as 5.
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def _decimal(text: str) -> float | None:
    return float(text) if _DECIMAL.fullmatch(text) else None


def threshold_of(args: argparse.Namespace) -> float | None:
    """The --threshold of `new`, `baseline` and `round` as a fraction: given as 0.05 or
    5%, at least MIN_THRESHOLD and below 100%. UsageError names the option."""
    text = args.threshold
    if text is None:
        return None
    raw = str(text).strip()
    number = _decimal(raw[:-1].strip() if raw.endswith("%") else raw)
    if number is None:
        raise UsageError(f"--threshold {text}: give a decimal fraction (0.05) or a percentage (5%)")
    value = number / 100 if raw.endswith("%") else number
    if not MIN_THRESHOLD <= value < 1:
        raise UsageError(
            f"--threshold {text}: the band must lie between {band(MIN_THRESHOLD)} and "
            "100% (0.02 or 2% for ±2%)"
        )
    return value


def budget_of(args: argparse.Namespace) -> float | None:
    """--budget in seconds: a positive, finite ASCII decimal. UsageError names it."""
    text = args.budget
    if text is None:
        return None

    value = _decimal(str(text).strip())
    if value is None or out_of_range("budget", value):
        high = range_of("budget").high
        raise UsageError(f"--budget {text}: give a positive number of seconds, at most {high:.0f}")
    return value


@contextmanager
def engine_monitor(
    ledger: Any, session_id: str, enabled: bool = True, gpu: str | None = None
) -> Iterator[Any]:
    """Telemetry for every run (samples to the ledger on a connection of their own), of
    the contract's GPU alone when it names one.

    None (no telemetry: every run's trust "unknown") when switched off.
    """
    if not enabled:
        yield None
        return
    # Here, not at the head: `compare` uses this module and runs without a ledger, and
    # telemetry loads psutil (tests/cli/test_cli_dispatch.py holds it to that).
    from session.api import Ledger, make_monitor

    sink = Ledger.open(ledger.path)
    monitor = make_monitor(sink.insert_samples, session_id, gpu_choice=gpu)
    try:
        status = str(getattr(monitor, "status", "ok"))
        if status != "ok":  # say it once: runs will be judged "unknown", never "clean"
            print(f"gpuopt: no GPU telemetry ({status}); host only, trust unknown",
                  file=sys.stderr)  # fmt: skip
        yield monitor
    finally:
        try:
            monitor.close()
        finally:
            sink.close()


@contextmanager
def interruptible() -> Iterator[Any]:
    """A stop event set by the first Ctrl+C; a second Ctrl+C aborts at once."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("\ngpuopt: stopping after the current run (Ctrl+C again to abort it)",
              file=sys.stderr, flush=True)  # fmt: skip

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def ratio_cells(c: Any, heading: str) -> tuple[str, str]:
    """A comparison's ratio and interval cells in a table whose interval column is headed
    `heading` (session.verdicts.ci_heading): one format, session.format's, at every door."""
    return ratio_text(c.ratio), ci_cell(c, heading)


def live_verdict(c: Any, p: Any) -> Any:
    """A comparison's verdict while the round runs, by the session layer's rule: BROKEN
    ("check failed") for a variant whose check failed, never a speed verdict (its timing
    says nothing worth keeping); the app's live table shows the same."""
    return shown_verdict(c, failed_checks=getattr(p, "failed_checks", ()) or ())


def _eta_if_known(p: Any) -> str:
    """A check's, an audit's or a baseline's ETA, once conduct knows one (none is made up
    before)."""
    return f"  ETA {eta_text(p.eta_s)}" if getattr(p, "eta_s", None) is not None else ""


@contextmanager
def progress_display(
    kind: str, names: dict[str, str] | None = None
) -> Iterator[Callable[[Any], None]]:
    """A callback showing conduct's progress on stderr (live on a terminal, lines otherwise)."""
    console = make_console(stderr=True, highlight=False)
    names = names or {}

    def name(variant_id: str) -> str:
        return plain(names.get(variant_id, variant_id))

    latest: list[Any] = []  # the newest progress; a terminal draws it at its own pace
    live = (
        Live(
            console=console,
            refresh_per_second=8,
            transient=True,
            # drawn at each refresh, not built at each block: a round of a short command
            # reports hundreds of blocks a second, and building the table per block cost
            # more than a run
            get_renderable=lambda: render(latest[-1]) if latest else Text(""),
        )
        if console.is_terminal
        else None
    )
    last_line = [""]
    said: list[Any] = [None, None, ""]  # the comparisons and failed checks last put in words

    def estimates(p: Any) -> str:
        """The comparisons in words. The round hands over the same comparison objects from
        one judgement to the next (copies, never changed), so the words are made once per
        judgement, not once per block: of a short command, that was a tenth of a run. The
        list kept here holds them alive, so that no new object can take one's identity."""
        comparisons, failed = list(p.comparisons), list(p.failed_checks or ())
        same = (
            said[0] is not None
            and len(said[0]) == len(comparisons)
            and all(a is b for a, b in zip(said[0], comparisons, strict=True))
            and said[1] == failed
        )
        if not same:
            said[:] = [comparisons, failed, ", ".join(
                f"{name(c.variant_id)}/{plain(c.workload)} {ratio_text(c.ratio)} "
                f"{live_verdict(c, p).text}"
                for c in comparisons
            )]  # fmt: skip
        return str(said[2])

    def render(p: Any) -> Any:
        parts: list[Any] = []
        if p.phase == "round":
            head = f"{kind}: block {p.block} of at most {p.max_blocks}  ETA {eta_text(p.eta_s)}"
        else:
            head = f"{kind}: {plain(p.message, 1000)}{_eta_if_known(p)}"  # stored names
        parts.append(Text(head))
        if p.runs_total:
            bar = Table.grid(padding=(0, 1))
            bar.add_row(ProgressBar(total=p.runs_total, completed=p.runs_done, width=40),
                        Text(f"{p.runs_done}/{p.runs_total} runs"))  # fmt: skip
            parts.append(bar)
        if p.comparisons:
            t = Table(box=None, header_style="bold", pad_edge=False)
            heading = ci_heading(p.comparisons)
            for col in ("variant", "workload", "n", "ratio", heading, "verdict"):
                t.add_column(col)
            for c in p.comparisons:
                ratio, ci = ratio_cells(c, heading)
                v = live_verdict(c, p)
                t.add_row(Text(name(c.variant_id)), shown(c.workload), str(c.n), ratio, ci,
                          Text(v.text, style=verdict_style(v.word)))  # fmt: skip
            parts.append(t)
        return Group(*parts)

    def show(p: Any) -> None:
        if live is not None:
            latest[:] = [p]
            return
        if p.phase == "round":
            line = f"block {p.block}/{p.max_blocks} ETA {eta_text(p.eta_s)}: {estimates(p)}"
        elif p.phase == "baseline":
            # one line per run would drown the log: about one per tenth of the runs
            step = (p.runs_done * 10 // p.runs_total) if p.runs_total else 0
            crossed = p.runs_total and step != (p.runs_done - 1) * 10 // p.runs_total
            if not crossed and p.runs_done != p.runs_total:  # a phase's last run: always
                return
            line = f"{plain(p.message, 1000)} ({p.runs_done}/{p.runs_total} runs){_eta_if_known(p)}"
        else:
            line = plain(p.message, 1000) + _eta_if_known(p)
        if line != last_line[0] and not console.quiet:
            # written as it is: plain text, never markup (names such as bench[fp16]), and
            # a line per block of a short command costs a write, not a Rich render
            try:
                console.file.write(f"{kind}: {line}\n")
                console.file.flush()
            except BrokenPipeError:  # the reader left: quiet from now on, as Rich's print
                console.on_broken_pipe()
            last_line[0] = line

    if live is not None:
        with live:
            yield show
    else:
        yield show
