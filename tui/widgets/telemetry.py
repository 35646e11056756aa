"""The telemetry panel: a few sparklines of the GPU and the host, drawn as one text block.

It is one widget with one render, so a 4 Hz feed costs one repaint per sample. It keeps the
last samples in ring buffers; `push` takes a `TelemetrySample`, `set_note` says once why
there is no GPU. Colours come from the 16 ANSI names so it reads without truecolor.
"""

from __future__ import annotations

import textwrap
from collections import deque
from collections.abc import Iterable

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from session import models as m

BARS = "▁▂▃▄▅▆▇█"

# NVML clock-event reason bits, in words.
REASONS: tuple[tuple[int, str, str], ...] = (
    (0x1, "idle", "dim"),
    (0x2, "app clocks", "dim"),
    (0x4, "power cap", "yellow"),
    (0x8, "HW slowdown", "red"),
    (0x10, "sync boost", "dim"),
    (0x20, "SW thermal", "red"),
    (0x40, "HW thermal", "red"),
    (0x80, "power brake", "red"),
    (0x100, "display clock", "dim"),
)


def reasons_in_words(mask: int | None) -> list[tuple[str, str]]:
    if mask is None:
        return []
    return [(word, style) for bit, word, style in REASONS if mask & bit]


def spark(values: Iterable[float | None], width: int, top: float | None = None) -> str:
    vals = [v for v in values][-width:]
    nums = [v for v in vals if v is not None]
    if not nums:
        return " " * width
    hi = top if top else max(nums)
    lo = 0.0
    span = (hi - lo) or 1.0
    out = []
    for v in vals:
        if v is None:
            out.append(" ")
            continue
        i = int((min(max(v, lo), hi) - lo) / span * (len(BARS) - 1) + 0.5)
        out.append(BARS[i])
    return "".join(out).rjust(width)


def short_note(note: str) -> str:
    """Why there is no GPU, in a few words (NVML's own messages are long)."""
    if not note:
        return "no GPU telemetry"
    low = note.lower()
    if "librarynotfound" in low or "library not found" in low or "shared library" in low:
        return "no GPU: NVML library not found (no NVIDIA driver)"
    if "no device" in low or "zero devices" in low or "sees no" in low:
        return "no GPU: NVML sees no device"
    return note


def _gib(n: float | None) -> str:
    return "—" if n is None else f"{n / 2**30:.1f}G"


class TelemetryPanel(Widget):
    """GPU and host telemetry, always mounted."""

    DEFAULT_CSS = """
    TelemetryPanel { height: auto; }
    """

    note: reactive[str] = reactive("")
    trust: reactive[str] = reactive("")
    compact: reactive[bool] = reactive(False)
    where: reactive[str] = reactive("")  # a Slurm job's state and node, while it measures

    HISTORY = 48

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.samples: deque[m.TelemetrySample] = deque(maxlen=self.HISTORY)
        self.gpu_name = ""
        self.count = 0

    def on_mount(self) -> None:
        panels: set[TelemetryPanel] = getattr(self.app, "telemetry_panels", set())
        panels.add(self)

    def on_unmount(self) -> None:
        getattr(self.app, "telemetry_panels", set()).discard(self)

    def push(self, sample: m.TelemetrySample) -> None:
        self.samples.append(sample)
        self.count += 1
        self.refresh(layout=False)

    def push_many(self, samples: Iterable[m.TelemetrySample]) -> None:
        for s in samples:
            self.samples.append(s)
            self.count += 1
        self.refresh()

    def set_note(self, note: str) -> None:
        self.note = note

    def _series(self, name: str) -> list[float | None]:
        return [getattr(s, name) for s in self.samples]

    def _last(self, name: str) -> float | None:
        for s in reversed(self.samples):
            v = getattr(s, name)
            if v is not None:
                return float(v)
        return None

    def render(self) -> Text:
        if any(s.source == "replay" for s in self.samples):
            return _label_replay(self._draw(len(REPLAY_LABEL)))
        return self._draw()

    def _draw(self, reserved: int = 0) -> Text:
        width = max(self.size.width - reserved, 20 - reserved)
        t = Text(no_wrap=True, overflow="ellipsis")
        has_gpu = any(s.util_gpu is not None or s.sm_clock_mhz is not None for s in self.samples)
        if self.compact:
            return self._render_compact(t, has_gpu)
        sw = max(width - 13, 4)  # label 5 + value 7 + gap
        if self.where:
            for line in textwrap.wrap(self.where, max(width, 8))[:2]:
                t.append(line + "\n", style="bold cyan")
        if self.gpu_name:
            t.append(self.gpu_name[:width] + "\n", style="bold")
        if has_gpu:
            self._line(
                t, "util", self._series("util_gpu"), sw, 100.0, self._pct(self._last("util_gpu"))
            )
            sm = self._last("sm_clock_mhz")
            self._line(
                t, "SM", self._series("sm_clock_mhz"), sw, None, "—" if sm is None else f"{sm:.0f}M"
            )
            pw, lim = self._last("power_w"), self._last("power_limit_w")
            self._line(
                t, "pwr", self._series("power_w"), sw, lim, "—" if pw is None else f"{pw:.0f}W"
            )
            mem = [None if v is None else float(v) for v in self._series("mem_used_bytes")]
            self._line(t, "mem", mem, sw, None, _gib(self._last("mem_used_bytes")))
            tc = self._last("temperature_c")
            self._line(
                t,
                "temp",
                self._series("temperature_c"),
                sw,
                100.0,
                "—" if tc is None else f"{tc:.0f}°C",
            )
            last = self.samples[-1] if self.samples else None
            words = reasons_in_words(last.clock_reasons if last else None)
            t.append("why  ", style="dim")
            if not words:
                t.append(
                    "no clock events\n" if last and last.clock_reasons == 0 else "—\n",
                    style="green" if last and last.clock_reasons == 0 else "dim",
                )
            else:
                for i, (w, style) in enumerate(words):
                    t.append(("" if i == 0 else ", ") + w, style=style)
                t.append("\n")
        else:
            note = short_note(self.note)
            for i, line in enumerate(textwrap.wrap(note, max(width - 5, 8))[:3]):
                t.append("GPU  " if i == 0 else "     ", style="dim")
                t.append(line + "\n", style="yellow")
        self._line(
            t, "cpu", self._series("cpu_percent"), sw, 100.0, self._pct(self._last("cpu_percent"))
        )
        rss = [None if v is None else float(v) for v in self._series("rss_bytes")]
        self._line(t, "rss", rss, sw, None, _gib(self._last("rss_bytes")))
        if self.trust:
            style = {"clean": "green", "warn": "yellow", "untrusted": "bold red"}.get(
                self.trust, "dim"
            )
            t.append("trust ", style="dim")
            t.append(self.trust, style=style)
        return t

    def _render_compact(self, t: Text, has_gpu: bool) -> Text:
        sw = 10
        if has_gpu:
            util, sm = self._last("util_gpu"), self._last("sm_clock_mhz")
            pw, tc = self._last("power_w"), self._last("temperature_c")
            t.append("gpu ", style="dim")
            t.append(spark(self._series("util_gpu"), sw, 100.0), style="green")
            t.append(f" {self._pct(util)} SM {sm or 0:.0f}M {pw or 0:.0f}W {tc or 0:.0f}°C")
            words = reasons_in_words(self.samples[-1].clock_reasons if self.samples else None)
            if words:
                t.append("  " + ", ".join(w for w, _ in words), style=words[0][1])
        else:
            t.append("gpu ", style="dim")
            t.append(short_note(self.note), style="yellow")
        t.append("\n")
        t.append("cpu ", style="dim")
        t.append(spark(self._series("cpu_percent"), sw, 100.0), style="cyan")
        t.append(f" {self._pct(self._last('cpu_percent'))} rss {_gib(self._last('rss_bytes'))}")
        if self.trust:
            t.append(f"  trust {self.trust}", style="dim")
        return t

    @staticmethod
    def _pct(v: float | None) -> str:
        return "—" if v is None else f"{v:.0f}%"

    def _line(
        self,
        t: Text,
        label: str,
        series: list[float | None],
        width: int,
        top: float | None,
        value: str,
    ) -> None:
        t.append(f"{label:<5}", style="dim")
        t.append(spark(series, width, top), style="green" if label in ("util", "cpu") else "cyan")
        t.append(f"{value:>7}\n")


REPLAY_WORD = "REPLAY"
REPLAY_SEP = " │ "
REPLAY_LABEL = REPLAY_WORD + REPLAY_SEP  # the column's width, separator included


def _label_replay(text: Text) -> Text:
    """Replayed samples are never mistaken for this machine's: a column of its own, REPLAY
    on every line, ruled off from the labels it stands beside."""
    out = Text(no_wrap=True, overflow="ellipsis")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        if line.plain or i < len(lines) - 1:
            out.append(REPLAY_WORD, style="bold magenta")
            out.append(REPLAY_SEP, style="dim")
            out.append_text(line)
    return out
