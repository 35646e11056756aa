"""The trust verdict of one run: a pure function of its samples and its before/after deltas.

- untrusted: a busy sample shows HW slowdown (0x8), SW thermal slowdown (0x20), HW thermal
  slowdown (0x40) or HW power brake (0x80); thermal violation time grew; uncorrected ECC
  errors appeared; or the GPU was lost.
- warn: SW power cap (0x4) in more than 10% of busy samples; median SM clock below 75% of
  the GPU's maximum; SM clock spread (highest − lowest busy sample, over the median) above
  5%; another process computing on the GPU; MIG mode on.
- unknown: no GPU telemetry (no NVML, no GPU, host only), or nothing readable to judge by.
  Never "clean" without evidence.
- clean: GPU samples were read, and none of the above.

Worst first: untrusted, warn, unknown, clean. A sample is busy when the GPU's utilization is
above zero and the "GPU idle" reason is absent. When a run has
no busy sample at all, the throttle rules look at all of its samples, the clock rules at none.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from measure.telemetry.backend import (
    HW_POWER_BRAKE,
    HW_SLOWDOWN,
    HW_THERMAL,
    IDLE,
    SW_POWER_CAP,
    SW_THERMAL,
)
from measure.vocabulary import Trust

__all__ = ["Trust", "is_busy", "judge"]

UNTRUSTED_BITS: tuple[tuple[int, str], ...] = (
    (HW_SLOWDOWN, "HW slowdown"),
    (SW_THERMAL, "SW thermal slowdown"),
    (HW_THERMAL, "HW thermal slowdown"),
    (HW_POWER_BRAKE, "HW power brake slowdown"),
)
POWER_CAP_SHARE = 0.10
MIN_CLOCK_SHARE = 0.75
MAX_CLOCK_SPREAD = 0.05
GPU_SOURCES = ("nvml", "replay")
_RANK = {Trust.UNTRUSTED: 3, Trust.WARN: 2, Trust.UNKNOWN: 1, Trust.CLEAN: 0}
_GPU_FIELDS = ("sm_clock_mhz", "clock_reasons", "power_w", "temperature_c", "util_gpu")


def _get(sample: Any, name: str) -> Any:
    if isinstance(sample, Mapping):
        return sample.get(name)
    return getattr(sample, name, None)


def is_busy(sample: Any) -> bool:
    """Utilization above zero and no "GPU idle" reason. (NVML's utilization is an average
    over the last fraction of a second, so a sample taken just after the work ended can
    still show some; the idle reason is of the moment.)"""
    reasons = _get(sample, "clock_reasons")
    if reasons is not None and int(reasons) & IDLE:
        return False
    util = _get(sample, "util_gpu")
    if util is not None:
        return float(util) > 0
    return True


def _readable(sample: Any) -> bool:
    return any(_get(sample, f) is not None for f in _GPU_FIELDS)


def judge(samples: Iterable[Any], deltas: Mapping[str, Any]) -> tuple[Trust, list[str]]:
    """(trust, reasons in words) for one run.

    `samples`: the run's samples (objects or dicts with the telemetry columns); GPU samples
    are those with source nvml/replay. `deltas`: what the monitor measured around the run:
    {"nvml": "ok" or the reason it is unavailable, "gpus": {"0": {"max_sm_clock_mhz",
    "mig", "lost", "violation_thermal_s", "ecc_uncorrected", "foreign_processes", ...}}}.
    """
    status = deltas.get("nvml")
    if status != "ok":
        why = status or "no GPU backend"
        return Trust.UNKNOWN, [f"no GPU telemetry: {why}"]
    gpus: Mapping[str, Any] = deltas.get("gpus") or {}
    if not gpus:
        return Trust.UNKNOWN, ["no GPU telemetry: no GPU was watched"]
    samples = [s for s in samples if _get(s, "source") in GPU_SOURCES]
    found: dict[Trust, list[str]] = {t: [] for t in Trust}
    multi = len(gpus) > 1
    for key in sorted(gpus, key=lambda k: (len(str(k)), str(k))):
        g = gpus[key]
        p = f"GPU {key}: " if multi else ""
        ss = [s for s in samples if str(_get(s, "gpu")) == str(key)]
        if g.get("lost"):
            found[Trust.UNTRUSTED].append(f"GPU {key} was lost (NVML: GPU is lost)")
        real = [s for s in ss if _readable(s)]
        _gpu_rules(p, g, real, found)
    for trust in (Trust.UNTRUSTED, Trust.WARN, Trust.UNKNOWN):
        if found[trust]:
            reasons = found[Trust.UNTRUSTED] + found[Trust.WARN] + found[Trust.UNKNOWN]
            return trust, reasons
    return Trust.CLEAN, []


def _gpu_rules(
    p: str, g: Mapping[str, Any], real: list[Any], found: dict[Trust, list[str]]
) -> None:
    thermal = g.get("violation_thermal_s")
    if thermal is not None and thermal > 0:
        found[Trust.UNTRUSTED].append(f"{p}thermal violation time grew by {thermal:.3g} s")
    ecc = g.get("ecc_uncorrected")
    if ecc is not None and ecc > 0:
        plural = "error" if ecc == 1 else "errors"
        found[Trust.UNTRUSTED].append(f"{p}{ecc} uncorrected ECC {plural} appeared")
    foreign = g.get("foreign_processes") or []
    if foreign:
        who = ", ".join(
            f"pid {f['pid']}" + (f" ({f['name']})" if f.get("name") else "") for f in foreign[:3]
        )
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        found[Trust.WARN].append(f"{p}another process on the GPU: {who}{more}")
    if g.get("mig"):
        found[Trust.WARN].append(f"{p}MIG mode is on (the GPU is partitioned)")
    if not real:
        if not g.get("lost"):
            found[Trust.UNKNOWN].append(f"{p}no readable GPU sample during the run")
        return
    busy = [s for s in real if is_busy(s)]
    pool, label = (busy, "busy samples") if busy else (real, "samples (the GPU was never busy)")
    with_reasons = [s for s in pool if _get(s, "clock_reasons") is not None]
    if not with_reasons:
        found[Trust.UNKNOWN].append(f"{p}clock-event reasons were not readable")
    else:
        n = len(with_reasons)
        for bit, word in UNTRUSTED_BITS:
            k = sum(1 for s in with_reasons if int(_get(s, "clock_reasons")) & bit)
            if k:
                found[Trust.UNTRUSTED].append(f"{p}{word} in {k} of {n} {label}")
        k = sum(1 for s in with_reasons if int(_get(s, "clock_reasons")) & SW_POWER_CAP)
        if k > POWER_CAP_SHARE * n:
            found[Trust.WARN].append(f"{p}SW power cap in {k} of {n} {label}")
    clocks = [float(_get(s, "sm_clock_mhz")) for s in busy if _get(s, "sm_clock_mhz") is not None]
    top = g.get("max_sm_clock_mhz")
    if clocks:
        med = statistics.median(clocks)
        if top and med < MIN_CLOCK_SHARE * float(top):
            found[Trust.WARN].append(
                f"{p}median SM clock {med:.0f} MHz is {med / float(top):.0%} "
                f"of its maximum {float(top):.0f} MHz"
            )
        if med > 0 and len(clocks) >= 2:
            spread = (max(clocks) - min(clocks)) / med
            if spread > MAX_CLOCK_SPREAD:
                found[Trust.WARN].append(
                    f"{p}SM clock spread {spread:.0%} across busy samples "
                    f"({min(clocks):.0f}–{max(clocks):.0f} MHz)"
                )
