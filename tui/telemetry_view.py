"""The telemetry view's text: one GPU or host line per sample, with history sparklines.

Shared by `gpuopt telemetry` (printed frames) and its full-screen app, so neither imports
the other.
"""

from __future__ import annotations

from typing import Any

SPARK = "▁▂▃▄▅▆▇█"
HISTORY = 40  # samples of history a sparkline draws from


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

        from session.api import decode_reasons

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
