"""A roofline chart in the terminal: log-log, the machine's ceilings and each profile's point."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from textual_plotext import PlotextPlot

from session.api import roofline_series


def _si(x: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:g}{prefix}"
    return f"{x:g}"


class RooflineChart(PlotextPlot):
    """Ceilings (bandwidth slope, compute flat) and the workloads' points, baseline and variants
    together; `show(profiles)` with (label, stored profile summary) pairs."""

    DEFAULT_CSS = "RooflineChart { height: 1fr; min-height: 12; }"

    def __init__(self, profiles: Sequence[tuple[str, Mapping[str, Any]]] = (), **kw: Any):
        super().__init__(**kw)
        self._profiles = list(profiles)

    def on_mount(self) -> None:
        self.replot()

    def show(self, profiles: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self._profiles = list(profiles)
        self.replot()

    def replot(self) -> None:
        roof, points = roofline_series(self._profiles)
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("roofline (log-log)")
        if roof is None:
            plt.title("roofline: no ceilings measured yet (run gpuopt profile)")
            self.refresh()
            return
        ridge = roof["flops"] / roof["bandwidth"]
        lo = min([ridge / 100, *(ai / 10 for _, ai, _ in points)])
        hi = max([ridge * 100, *(ai * 10 for _, ai, _ in points)])
        xs = [
            10 ** (math.log10(lo) + i * (math.log10(hi) - math.log10(lo)) / 60) for i in range(61)
        ]
        ys = [min(roof["flops"], roof["bandwidth"] * x) for x in xs]
        plt.xscale("log")
        plt.yscale("log")
        plt.plot(xs, ys, label="ceilings", marker="braille")
        for label, ai, achieved in points:
            plt.scatter([ai], [achieved], label=label, marker="●")
        lo_y = min([*ys, *(a for _, _, a in points)])
        ticks = [
            10.0**e
            for e in range(math.floor(math.log10(lo_y)), math.ceil(math.log10(roof["flops"])) + 1)
        ]
        plt.yticks(ticks, [_si(t) for t in ticks])
        plt.xlabel("FLOP per byte")
        plt.ylabel("FLOP/s")
        self.refresh()
