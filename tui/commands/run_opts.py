"""What the commands that measure share: --threshold and --budget read as fractions and
seconds, telemetry for an engine's runs, Ctrl+C as a clean stop, and the live progress
they show on stderr (`round`, `baseline`, `compare`, `bisect`, `job` and their Slurm jobs).

Lazy imports, on purpose: `gpuopt --help` imports no command module, and a command's
module must not pay for textual, pydantic or the engine before it runs.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from session.errors import BadInput as UsageError

# An ASCII decimal, as typed: float() would also read "1_0" as 10 and "٥" as 5.
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def _decimal(text: str) -> float | None:
    return float(text) if _DECIMAL.fullmatch(text) else None


def threshold_of(args: argparse.Namespace) -> float | None:
    """The --threshold of `new`, `baseline` and `round` as a fraction: given as 0.05 or
    5%, at least MIN_THRESHOLD and below 100%. UsageError names the option."""
    from session.bands import MIN_THRESHOLD, band

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
    from session.limits import out_of_range, range_of

    value = _decimal(str(text).strip())
    if value is None or out_of_range("budget", value):
        high = range_of("budget").high
        raise UsageError(f"--budget {text}: give a positive number of seconds, at most {high:.0f}")
    return value


def add_threshold(p: argparse.ArgumentParser, what: str, default: str = "the contract's") -> None:
    """The one --threshold option of `new`, `baseline` and `round` (read by threshold_of)."""
    p.add_argument(
        "--threshold",
        metavar="F",
        help=f"{what}, ±F: a fraction or a percentage, e.g. 0.05 or 5%% (default {default})",
    )


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
    import sys

    from session.ledger_access import Ledger
    from session.telemetry_access import make_monitor

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
    import signal
    import sys
    import threading

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


def _fmt_eta(eta: float | None) -> str:
    if eta is None:
        return "ETA —"
    eta = max(0.0, eta)
    if eta < 60:
        return f"ETA {eta:.0f}s"
    if eta < 3600:
        return f"ETA {eta // 60:.0f}m{eta % 60:02.0f}s"
    return f"ETA {eta // 3600:.0f}h{(eta % 3600) // 60:02.0f}m"


def _eta_if_known(p: Any) -> str:
    """A check's or an audit's ETA, once conduct knows one (none is made up before)."""
    return f"  {_fmt_eta(p.eta_s)}" if getattr(p, "eta_s", None) is not None else ""


def ratio_cells(c: Any) -> tuple[str, str]:
    ratio = "—" if c.ratio is None else f"{c.ratio:.4f}"
    ci = "—" if c.ci_low is None or c.ci_high is None else f"{c.ci_low:.4f}–{c.ci_high:.4f}"
    return ratio, ci


VERDICT_STYLE = {
    "FASTER": "green",
    "SLOWER": "red",
    "SAME": "cyan",
    "INCONCLUSIVE": "yellow",
    "MEASURABLE": "magenta",
    "FAILED": "red",
    "BROKEN": "red",
    "check failed": "red",
}


def _progress_word(c: Any, p: Any) -> str:
    """A comparison's word while the round runs: never a speed verdict for a variant
    whose correctness check failed (its timing says nothing worth keeping)."""
    if c.variant_id in getattr(p, "failed_checks", ()):
        return "check failed"
    return str(c.verdict.value)


@contextmanager
def progress_display(
    kind: str, names: dict[str, str] | None = None
) -> Iterator[Callable[[Any], None]]:
    """A callback showing conduct's progress on stderr (live on a terminal, lines otherwise)."""
    from rich.console import Group
    from rich.live import Live
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    from tui.display import console as make_console
    from tui.display import plain, shown

    console = make_console(stderr=True, highlight=False)
    names = names or {}

    def name(variant_id: str) -> str:
        return plain(names.get(variant_id, variant_id))

    live = (
        Live(console=console, refresh_per_second=8, transient=True) if console.is_terminal else None
    )
    last_line = [""]

    def render(p: Any) -> Any:
        parts: list[Any] = []
        if p.phase == "round":
            head = f"{kind}: block {p.block} of at most {p.max_blocks}  {_fmt_eta(p.eta_s)}"
        else:
            head = f"{kind}: {plain(p.message, 1000)}{_eta_if_known(p)}"  # stored names
        parts.append(Text(head))
        if p.runs_total:
            bar = Table.grid(padding=(0, 1))
            bar.add_row(ProgressBar(total=p.runs_total, completed=p.runs_done, width=40),
                        Text(f"{p.runs_done}/{p.runs_total} runs"))  # fmt: skip
            parts.append(bar)
        if p.comparisons:
            from session.verdicts import ci_heading

            t = Table(box=None, header_style="bold", pad_edge=False)
            for col in ("variant", "workload", "n", "ratio", ci_heading(p.comparisons), "verdict"):
                t.add_column(col)
            for c in p.comparisons:
                ratio, ci = ratio_cells(c)
                v = _progress_word(c, p)
                t.add_row(Text(name(c.variant_id)), shown(c.workload), str(c.n), ratio, ci,
                          Text(v, style=VERDICT_STYLE.get(v, "white")))  # fmt: skip
            parts.append(t)
        return Group(*parts)

    def show(p: Any) -> None:
        if live is not None:
            live.update(render(p))
            return
        if p.phase == "round":
            est = ", ".join(
                f"{name(c.variant_id)}/{plain(c.workload)} {ratio_cells(c)[0]} "
                f"{_progress_word(c, p)}"
                for c in p.comparisons
            )
            line = f"block {p.block}/{p.max_blocks} {_fmt_eta(p.eta_s)}: {est}"
        elif p.phase == "baseline":
            # one line per run would drown the log: about one per tenth of the runs
            step = (p.runs_done * 10 // p.runs_total) if p.runs_total else 0
            crossed = p.runs_total and step != (p.runs_done - 1) * 10 // p.runs_total
            if not crossed and p.runs_done != p.runs_total:  # a phase's last run: always
                return
            line = f"{plain(p.message, 1000)} ({p.runs_done}/{p.runs_total} runs)"
        else:
            line = plain(p.message, 1000) + _eta_if_known(p)
        if line != last_line[0]:  # a Text: names such as bench[fp16] are never markup
            console.print(Text(f"{kind}: {line}"), soft_wrap=True)
            last_line[0] = line

    if live is not None:
        with live:
            yield show
    else:
        yield show
