"""Where a workload sits against the machine's ceilings, and the bottleneck class it suggests.

The class is a suggestion with the numbers behind it, for the person to confirm: launch-bound
when the step's time is near its launch count times the per-launch cost, else memory-bound
below the ridge point (the ceilings' FLOP/s per byte) and compute-bound above it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from measure.profiling.ceilings import Part

LAUNCH = "launch-bound"
MEMORY = "memory-bound"
COMPUTE = "compute-bound"
LAUNCH_SHARE = 0.5  # launches x per-launch cost at least this share of the step's time
NEAR_RIDGE = 2.0  # an intensity within this factor of the ridge point is borderline


@dataclass
class Ceilings:
    bandwidth: float  # bytes/s
    flops: float  # FLOP/s
    launch_s: float | None  # seconds per launch
    source: str


@dataclass
class Position:
    intensity: float | None  # FLOP per byte
    achieved_bandwidth: float | None
    achieved_flops: float | None
    bandwidth_fraction: float | None
    flops_fraction: float | None
    ridge: float | None
    launch_share: float | None
    suggested: str | None
    borderline: bool
    reasons: list[str] = field(default_factory=list)
    ceilings: dict[str, Any] = field(default_factory=dict)
    vendor: dict[str, Any] | None = None  # the same against the table's part, when known

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measured(probe: dict[str, Any] | None) -> Ceilings | None:
    if not probe or not probe.get("bandwidth_bytes_per_s") or not probe.get("flops_per_s"):
        return None
    return Ceilings(
        float(probe["bandwidth_bytes_per_s"]),
        float(probe["flops_per_s"]),
        float(probe["launch_s"]) if probe.get("launch_s") else None,
        f"measured on this machine ({probe.get('how', 'probe')})",
    )


def vendor(part: Part | None, dtype: str) -> Ceilings | None:
    if part is None:
        return None
    peak = part.peak(dtype)
    if not peak:
        return None
    return Ceilings(part.bandwidth, peak, None, f"{part.name}: {part.source}")


def si(x: float, unit: str) -> str:
    """A figure in SI units: 655360 FLOP -> "655 kFLOP"."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _share_of(fraction: float, ceiling: str, measured: bool) -> str:
    """ "37% of the bandwidth ceiling", or, above 100% of a measured probe, that the probe
    is a lower bound of the ceiling (a workload can beat a simple probe, not the chip)."""
    if fraction > 1 and measured:
        return f"above the measured {ceiling} probe, a lower bound of the ceiling"
    return f"{fraction:.0%} of the {ceiling} ceiling"


def position(
    *,
    step_s: float | None,
    flops: float | None,
    nbytes: float | None,
    launches: float | None,
    ceilings: Ceilings | None,
    table: Ceilings | None = None,
) -> Position:
    """The roofline position of one step, and the class it suggests (with its reasons)."""
    ai = flops / nbytes if flops is not None and nbytes else None
    ach_bw = nbytes / step_s if nbytes is not None and step_s else None
    ach_f = flops / step_s if flops is not None and step_s else None
    ref = ceilings or table
    pos = Position(ai, ach_bw, ach_f, None, None, None, None, None, False)
    if ref is None:
        pos.reasons.append("no ceilings known for this machine: no class suggested")
        return pos
    pos.ceilings = asdict(ref)
    pos.ridge = ref.flops / ref.bandwidth
    pos.bandwidth_fraction = ach_bw / ref.bandwidth if ach_bw is not None else None
    pos.flops_fraction = ach_f / ref.flops if ach_f is not None else None
    if table is not None and ceilings is not None:
        pos.vendor = {
            "source": table.source,
            "bandwidth_fraction": ach_bw / table.bandwidth if ach_bw is not None else None,
            "flops_fraction": ach_f / table.flops if ach_f is not None else None,
            "ridge": table.flops / table.bandwidth,
        }
    if launches and ref.launch_s and step_s:
        pos.launch_share = launches * ref.launch_s / step_s
        if pos.launch_share >= LAUNCH_SHARE:
            pos.suggested = LAUNCH
            pos.reasons.append(
                f"{launches:g} launches x {ref.launch_s * 1e6:.3g} µs each = "
                f"{pos.launch_share:.0%} of the step's {step_s * 1e3:.3g} ms"
            )
            return pos
    if ai is None:
        pos.reasons.append("no FLOP or byte count: no class suggested")
        return pos
    pos.suggested = MEMORY if ai < pos.ridge else COMPUTE
    ratio = ai / pos.ridge if pos.ridge else 0.0
    pos.borderline = 1 / NEAR_RIDGE < ratio < NEAR_RIDGE
    side = "below" if ai < pos.ridge else "above"
    pos.reasons.append(
        f"intensity {ai:.3g} FLOP/byte is {side} the ridge point {pos.ridge:.3g} FLOP/byte "
        f"({si(ref.flops, 'FLOP/s')} / {si(ref.bandwidth, 'B/s')})"
        + (": near it, either bound is plausible" if pos.borderline else "")
    )
    if pos.bandwidth_fraction is not None and pos.flops_fraction is not None:
        measured = ceilings is not None
        pos.reasons.append(
            f"achieved {si(ach_bw or 0.0, 'B/s')} "
            f"({_share_of(pos.bandwidth_fraction, 'bandwidth', measured)}) and "
            f"{si(ach_f or 0.0, 'FLOP/s')} ({_share_of(pos.flops_fraction, 'compute', measured)})"
        )
    if pos.launch_share is not None:
        pos.reasons.append(f"launch overhead about {pos.launch_share:.0%} of the step")
    return pos


def amdahl_ceiling(share: float) -> float | None:
    """The largest end-to-end speed-up if a phase taking `share` of the time took none."""
    if share is None or share < 0:
        return None
    if share >= 1:
        return float("inf")
    return 1.0 / (1.0 - share)
