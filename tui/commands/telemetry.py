"""`gpuopt telemetry`: a live terminal view of every GPU and of the host.

Per GPU: utilization, SM clock against its maximum, memory, power against its limit,
temperature, clock-event reasons in words, with history sparklines; then host CPU and
memory. `--once --json` prints one sample as JSON and exits. `--replay SCENARIO` plays a
recorded scenario (every line says REPLAY) and walks it through a few runs to show their
trust verdicts. With no GPU it says why in one line (NVML's words) and shows the host.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tui.commands.numbers import number, within

if TYPE_CHECKING:
    import threading

# Lazy imports, on purpose: `gpuopt --help` imports this module, and must not pay for
# textual, pydantic or the engine (tests/cli/test_cli_imports.py). Each handler imports
# what it uses.


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "telemetry",
        help="live view of GPU clocks, power, temperature, throttle reasons and host load",
        description=(
            "Live view of every GPU (utilization, SM clock against max, memory, power against "
            "limit, temperature, clock-event reasons) and of the host. Ctrl+C to quit."
        ),
    )
    p.add_argument("--once", action="store_true", help="take one sample, print it and exit")
    p.add_argument("--json", action="store_true", help="with --once: print the sample as JSON")
    p.add_argument(
        "--replay",
        metavar="SCENARIO",
        help="play a recorded scenario (a name, or a JSON file) instead of the real GPUs",
    )
    p.add_argument(
        "--scenarios", action="store_true", help="list the replay scenarios shipped with gpuopt"
    )
    p.add_argument(
        "--seconds",
        type=number("seconds"),
        default=0.0,
        help=f"stop after this many seconds (0: until Ctrl+C; {within('seconds')})",
    )
    p.add_argument(
        "--interval",
        type=number("interval"),
        default=0.5,
        help=f"seconds between screen refreshes (0.5; {within('interval')})",
    )
    p.set_defaults(handler=run)


SPARK = "▁▂▃▄▅▆▇█"
HISTORY = 40


def sparkline(values: list[float | None], top: float | None, width: int = 16) -> str:
    vals = values[-width:]
    if not vals:
        return " " * width
    hi = top or max((v for v in vals if v is not None), default=0.0) or 1.0
    out = []
    for v in vals:
        if v is None:
            out.append(" ")
            continue
        share = min(max(v / hi, 0.0), 1.0)
        out.append(SPARK[min(int(share * (len(SPARK) - 1) + 0.5), len(SPARK) - 1)])
    return "".join(out).rjust(width)


def _gib(n: float | None) -> str:
    return "—" if n is None else f"{n / 2**30:.1f}"


def _num(v: float | None, fmt: str = "{:.0f}") -> str:
    return "—" if v is None else fmt.format(v)


class View:
    """What the screen shows; fed by the sampler thread through `on_sample`."""

    def __init__(self, replay: str | None = None):
        import collections
        import threading

        self.replay = replay
        self.lock = threading.Lock()
        self.status = "starting"
        self.devices: dict[int, Any] = {}
        self.gpu: dict[int, Any] = {}
        self.host: Any = None
        self.hist: dict[tuple[Any, str], collections.deque[float | None]] = {}
        self.verdicts: list[str] = []
        self._deque = collections.deque

    def on_sample(self, samples: list[Any]) -> None:
        import dataclasses

        with self.lock:
            for s in samples:
                key: Any = s.gpu if s.gpu is not None else "host"
                if s.gpu is not None:
                    prev = self.gpu.get(s.gpu)
                    if prev is not None and s.pcie_tx_kbps is None and s.pcie_rx_kbps is None:
                        # PCIe is read at most once a second: show the last reading between
                        s = dataclasses.replace(
                            s, pcie_tx_kbps=prev.pcie_tx_kbps, pcie_rx_kbps=prev.pcie_rx_kbps
                        )
                    self.gpu[s.gpu] = s
                else:
                    self.host = s
                for name in ("util_gpu", "sm_clock_mhz", "power_w", "temperature_c", "cpu_percent"):
                    h = self.hist.setdefault((key, name), self._deque(maxlen=HISTORY))
                    h.append(getattr(s, name))

    def lines(self) -> list[Any]:
        from rich.text import Text

        from session.telemetry_access import decode_reasons

        out: list[Text] = []
        with self.lock:
            if self.status != "ok":
                out.append(Text(f"no GPU telemetry: {self.status}", style="yellow"))
            for idx in sorted(self.gpu):
                s = self.gpu[idx]
                info = self.devices.get(idx)
                name = info.name if info else ""
                hist = lambda n, k=idx: list(self.hist.get((k, n), []))  # noqa: E731
                if s.extra.get("lost"):
                    out.append(
                        Text(f"GPU {idx}  {name}  LOST (NVML: GPU is lost)", style="bold red")
                    )
                    continue
                head = f"GPU {idx}  {name}  P{_num(s.pstate)}  {_num(s.temperature_c)}°C"
                if info is not None and info.mig:
                    head += "  MIG on"
                out.append(Text(head, style="bold"))
                out.append(
                    Text(
                        f"  util   {sparkline(hist('util_gpu'), 100)} {_num(s.util_gpu):>5}%"
                        f"   memory bus {_num(s.util_mem)}%"
                    )
                )
                top = info.max_sm_clock_mhz if info else None
                share = f" ({s.sm_clock_mhz / top:.0%})" if top and s.sm_clock_mhz else ""
                out.append(
                    Text(
                        f"  SM     {sparkline(hist('sm_clock_mhz'), top)} "
                        f"{_num(s.sm_clock_mhz):>5} / {_num(top)} MHz{share}"
                        f"   mem clock {_num(s.mem_clock_mhz)} MHz"
                    )
                )
                out.append(
                    Text(
                        f"  power  {sparkline(hist('power_w'), s.power_limit_w)} "
                        f"{_num(s.power_w):>5} / {_num(s.power_limit_w)} W"
                    )
                )
                out.append(
                    Text(
                        f"  temp   {sparkline(hist('temperature_c'), 100)} "
                        f"{_num(s.temperature_c):>5}°C"
                        f"   memory {_gib(s.mem_used_bytes)} / "
                        f"{_gib(info.mem_total_bytes if info else None)} GiB"
                        f"   PCIe tx {_num(s.pcie_tx_kbps)} rx {_num(s.pcie_rx_kbps)} KB/s"
                    )
                )
                words = ", ".join(decode_reasons(s.clock_reasons))
                bad = s.clock_reasons is not None and s.clock_reasons & 0xE8
                out.append(Text(f"  reasons: {words}", style="bold red" if bad else ""))
            host_from = len(out)  # the host's lines: this machine's, even in a replay
            h = self.host
            if h is not None:
                hist = lambda n, k="host": list(self.hist.get((k, n), []))  # noqa: E731
                x = h.extra
                cores = x.get("core_mhz") or []
                span = f"{min(cores):.0f}–{max(cores):.0f}" if cores else ""
                if cores and min(cores) == max(cores):
                    span = f"{min(cores):.0f}"
                freq = f"   {len(cores)} cores {span} MHz" if cores else ""
                out.append(
                    Text(
                        f"host   cpu {sparkline(hist('cpu_percent', 'host'), 100)}"
                        f" {_num(h.cpu_percent):>3}%   load {_num(h.load1, '{:.2f}')}"
                        f"   memory {_gib(x.get('host_mem_used_bytes'))} / "
                        f"{_gib(x.get('host_mem_total_bytes'))} GiB{freq}"
                    )
                )
            host_end = len(out)
            for v in self.verdicts[-3:]:
                out.extend(Text(line) for line in v.splitlines())
        if self.replay is not None:  # a column of its own, ruled off: never "REPLAYutil"
            label = Text.assemble(("REPLAY", "bold magenta"), (" │ ", "dim"))
            live = Text.assemble(("LIVE  ", "bold green"), (" │ ", "dim"))
            out = [
                Text.assemble(label if i < host_from or i >= host_end else live, line)
                for i, line in enumerate(out)
            ] or [label]
            out.insert(0, Text.assemble(label, Text(f"scenario: {self.replay}", style="magenta")))
        for line in out:  # one screen line each: a wrapped line would lose its label
            line.no_wrap = True
            line.overflow = "ellipsis"
        return out


def snapshot(monitor: Any, replay: str | None) -> dict[str, Any]:
    """One sample of everything, as JSON-ready data."""
    from session.telemetry_access import decode_reasons

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
    import time

    from session.telemetry_access import BackendUnavailable, make_monitor
    from tui.cli import UsageError
    from tui.commands.common import print_json

    if args.scenarios:
        from session.telemetry_access import load_scenario, scenario_names

        for name in scenario_names():
            sc = load_scenario(name)
            print(f"{name:22} {sc.get('title', '')}: {sc.get('description', '')}")
        return 0
    if args.json and not args.once:
        raise UsageError("--json goes with --once (one sample as JSON)")
    if args.interval <= 0 or args.seconds < 0:
        raise UsageError("--interval must be above 0 and --seconds at least 0")
    if not args.once and _in_a_terminal():  # the live app; a pipe or a log gets a printout
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
    import sys

    return sys.stdin.isatty() and sys.stdout.isatty() and sys.stderr.isatty()


def _print_once(view: View) -> None:
    from rich.console import Group

    from tui.display import console as make_console

    make_console().print(Group(*view.lines()))  # a Group keeps each line unwrapped


def _live(monitor: Any, view: View, args: argparse.Namespace) -> None:
    """Frames until --seconds, the reader's leaving, or Ctrl+C (TERM and HUP come here as
    Ctrl+C): the signal only sets an event the loop waits on, so it never lands inside a
    lock the sampler's threads need (a KeyboardInterrupt there left `monitor.close()`
    waiting forever on a loaded machine), and the view ends at once, not after a sleep."""
    import signal
    import threading

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
    import time

    from rich.console import Group
    from rich.live import Live

    from tui.display import console as make_console

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
