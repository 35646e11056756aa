"""`gpuopt telemetry`: a live terminal view of every GPU and of the host.

Per GPU: utilization, SM clock against its maximum, memory, power against its limit,
temperature, clock-event reasons in words, with history sparklines; then host CPU and
memory. `--once --json` prints one sample as JSON and exits. `--replay SCENARIO` plays a
recorded scenario (every line says REPLAY) and walks it through a few runs to show their
trust verdicts. With no GPU it says why in one line (NVML's words) and shows the host.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import Any

from rich.console import Group
from rich.live import Live

from session.api import (
    BackendUnavailable,
    decode_reasons,
    load_scenario,
    make_monitor,
    scenario_names,
)
from session.api import BadInput as UsageError
from tui.commands.common import print_json
from tui.display import console as make_console
from tui.telemetry_view import View


def snapshot(monitor: Any, replay: str | None) -> dict[str, Any]:
    """One sample of everything, as JSON-ready data."""
    samples = monitor.latest
    gpus = []
    host = None
    for s in samples:
        d = s.as_dict()
        if s.gpu is not None:
            d["reasons"] = decode_reasons(s.clock_reasons)
            gpus.append(d)
        else:
            host = d
    return {
        "source": monitor.source,
        "replay": replay is not None,
        "scenario": replay,
        "nvml": monitor.status,
        "devices": [d.as_dict() for d in monitor.devices],
        "gpus": gpus,
        "host": host,
    }


def run(args: argparse.Namespace) -> int:
    if args.scenarios:
        for name in scenario_names():
            sc = load_scenario(name)
            print(f"{name:22} {sc.get('title', '')}: {sc.get('description', '')}")
        return 0
    if args.json and not args.once:
        raise UsageError("--json goes with --once (one sample as JSON)")
    if args.interval <= 0 or args.seconds < 0:
        raise UsageError("--interval must be above 0 and --seconds at least 0")
    if not args.once and _in_a_terminal():  # the live app; a pipe or a log gets a printout
        # Here, not at the head: textual only for the live app (--once and a pipe print).
        from tui.telemetry_app import TelemetryApp

        app = TelemetryApp(scenario=args.replay, interval=args.interval, seconds=args.seconds)
        app.run()
        return app.return_code or 0
    view = View(replay=None)
    try:
        monitor = make_monitor(
            None, None, scenario=args.replay, on_sample=view.on_sample, start=not args.once
        )
    except BackendUnavailable as exc:
        raise UsageError(str(exc)) from None
    title = None
    if args.replay is not None:
        title = getattr(monitor.sampler.gpu, "title", args.replay)
        view.replay = title
    try:
        view.status = monitor.status
        view.devices = {d.index: d for d in monitor.devices}
        if args.once:
            time.sleep(0.2)  # CPU % needs an interval to measure over
            monitor.tick()
            data = snapshot(monitor, title)
            if args.json:
                print_json(data)
            else:
                _print_once(view)
            return 0
        _live(monitor, view, args)
    except KeyboardInterrupt:
        pass
    finally:
        monitor.close()
    return 0


def _in_a_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty()


def _print_once(view: View) -> None:
    make_console().print(Group(*view.lines()))  # a Group keeps each line unwrapped


def _live(monitor: Any, view: View, args: argparse.Namespace) -> None:
    """Frames until --seconds, the reader's leaving, or Ctrl+C (TERM and HUP come here as
    Ctrl+C): the signal only sets an event the loop waits on, so it never lands inside a
    lock the sampler's threads need (a KeyboardInterrupt there left `monitor.close()`
    waiting forever on a loaded machine), and the view ends at once, not after a sleep."""
    stop = threading.Event()
    previous: Any = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, lambda _signum, _frame: stop.set())
    try:
        _frames(monitor, view, args, stop)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _frames(monitor: Any, view: View, args: argparse.Namespace, stop: threading.Event) -> None:
    deadline = time.monotonic() + args.seconds if args.seconds else None
    replay = view.replay is not None
    run_n, in_run, switch = 0, False, time.monotonic() + 1.0
    console = make_console()
    if not console.is_terminal:  # a pipe or a log: a frame per interval, written as it goes
        live: Any = None
    else:
        live = Live(Group(*view.lines()), console=console, refresh_per_second=4)
        live.start()
    try:
        while deadline is None or time.monotonic() < deadline:
            if stop.wait(args.interval):
                return
            if replay and time.monotonic() >= switch:  # walk the scenario through runs
                if in_run:
                    obs = monitor.run_finished(f"replay-{run_n}")
                    why = "".join(f"\n  · {r}" for r in obs.reasons) or " (no problem seen)"
                    view.verdicts.append(f"replay run {run_n}: {obs.trust}{why}")
                    switch = time.monotonic() + 1.0
                else:
                    run_n += 1
                    monitor.run_started(f"replay-{run_n}", None)
                    switch = time.monotonic() + 2.5
                in_run = not in_run
            if live is not None:
                live.update(Group(*view.lines()))
            else:
                console.print(Group(*view.lines()), "")  # a blank line between frames
                console.file.flush()
                if console.quiet:  # the reader went away (`| head -3`): a view has no one
                    return  # left to show to, so it ends, with status 0
    finally:
        if live is not None:
            live.stop()
