"""The trust verdict: a pure function of a run's samples and deltas."""

from __future__ import annotations

from typing import Any

import pytest

from measure.telemetry.trust import Trust, judge


def gpu_sample(**kw: Any) -> dict[str, Any]:
    base = {
        "source": "nvml",
        "gpu": 0,
        "sm_clock_mhz": 1980.0,
        "clock_reasons": 0,
        "util_gpu": 95.0,
        "power_w": 600.0,
        "temperature_c": 50.0,
    }
    base.update(kw)
    return base


def deltas(**gpu: Any) -> dict[str, Any]:
    g = {"max_sm_clock_mhz": 1980.0, "mig": False, "lost": False, "violation_thermal_s": 0.0,
         "ecc_uncorrected": 0, "foreign_processes": []}  # fmt: skip
    g.update(gpu)
    return {"nvml": "ok", "gpus": {"0": g}}


def busy(n: int, **kw: Any) -> list[dict[str, Any]]:
    return [gpu_sample(**kw) for _ in range(n)]


def test_clean_needs_gpu_samples() -> None:
    assert judge(busy(12), deltas()) == (Trust.CLEAN, [])


def test_no_nvml_is_unknown_with_the_reason() -> None:
    trust, reasons = judge([{"source": "host", "cpu_percent": 3.0}], {"nvml": "Driver Not Loaded"})
    assert trust is Trust.UNKNOWN
    assert reasons == ["no GPU telemetry: Driver Not Loaded"]


def test_host_only_is_never_clean() -> None:
    assert judge([], {"nvml": "ok", "gpus": {}})[0] is Trust.UNKNOWN
    assert judge([], {})[0] is Trust.UNKNOWN


def test_no_readable_gpu_sample_is_unknown() -> None:
    empty = [{"source": "nvml", "gpu": 0}]
    trust, reasons = judge(empty, deltas())
    assert trust is Trust.UNKNOWN
    assert "no readable GPU sample" in reasons[0]


def test_unreadable_clock_reasons_is_unknown() -> None:
    trust, reasons = judge(busy(5, clock_reasons=None), deltas())
    assert trust is Trust.UNKNOWN
    assert reasons == ["clock-event reasons were not readable"]


@pytest.mark.parametrize(
    ("bit", "word"),
    [(0x8, "HW slowdown"), (0x20, "SW thermal slowdown"), (0x40, "HW thermal slowdown"),
     (0x80, "HW power brake slowdown")],
)  # fmt: skip
def test_one_busy_sample_with_a_slowdown_is_untrusted(bit: int, word: str) -> None:
    samples = [*busy(11), gpu_sample(clock_reasons=bit)]
    trust, reasons = judge(samples, deltas())
    assert trust is Trust.UNTRUSTED
    assert f"{word} in 1 of 12 busy samples" in reasons


def test_slowdown_in_idle_samples_is_not_counted_when_busy_ones_exist() -> None:
    samples = [*busy(10), gpu_sample(util_gpu=0.0, clock_reasons=1 | 64, sm_clock_mhz=300.0)]
    assert judge(samples, deltas()) == (Trust.CLEAN, [])


def test_a_run_that_never_used_the_gpu_is_checked_on_all_samples() -> None:
    idle = [gpu_sample(util_gpu=0.0, clock_reasons=0x1, sm_clock_mhz=345.0) for _ in range(3)]
    assert judge(idle, deltas()) == (Trust.CLEAN, [])  # low idle clocks are no warning
    idle.append(gpu_sample(util_gpu=0.0, clock_reasons=0x1 | 0x8, sm_clock_mhz=345.0))
    trust, reasons = judge(idle, deltas())
    assert trust is Trust.UNTRUSTED
    assert reasons == ["HW slowdown in 1 of 4 samples (the GPU was never busy)"]


def test_thermal_violation_ecc_and_lost_gpu_are_untrusted() -> None:
    assert judge(busy(4), deltas(violation_thermal_s=0.5)) == (
        Trust.UNTRUSTED, ["thermal violation time grew by 0.5 s"])  # fmt: skip
    assert judge(busy(4), deltas(ecc_uncorrected=2)) == (
        Trust.UNTRUSTED, ["2 uncorrected ECC errors appeared"])  # fmt: skip
    trust, reasons = judge([{"source": "nvml", "gpu": 0}], deltas(lost=True))
    assert trust is Trust.UNTRUSTED
    assert reasons == ["GPU 0 was lost (NVML: GPU is lost)"]


def test_power_violation_alone_is_not_a_reason() -> None:
    assert judge(busy(4), deltas(violation_power_s=3.0))[0] is Trust.CLEAN


def test_sw_power_cap_warns_only_above_ten_percent() -> None:
    one_in_ten = [*busy(9), gpu_sample(clock_reasons=4)]
    assert judge(one_in_ten, deltas())[0] is Trust.CLEAN
    two_in_ten = busy(8) + [gpu_sample(clock_reasons=0x4)] * 2
    assert judge(two_in_ten, deltas()) == (Trust.WARN, ["SW power cap in 2 of 10 busy samples"])


def test_low_median_clock_warns() -> None:
    trust, reasons = judge(busy(6, sm_clock_mhz=1400.0), deltas())
    assert trust is Trust.WARN
    assert reasons == ["median SM clock 1400 MHz is 71% of its maximum 1980 MHz"]
    assert judge(busy(6, sm_clock_mhz=1500.0), deltas())[0] is Trust.CLEAN  # 76%


def test_clock_spread_warns_above_five_percent() -> None:
    samples = busy(5, sm_clock_mhz=1980.0) + busy(5, sm_clock_mhz=1860.0)
    trust, reasons = judge(samples, deltas())
    assert trust is Trust.WARN
    assert reasons[0].startswith("SM clock spread 6%")
    close = busy(5, sm_clock_mhz=1980.0) + busy(5, sm_clock_mhz=1900.0)
    assert judge(close, deltas())[0] is Trust.CLEAN


def test_foreign_process_and_mig_warn() -> None:
    trust, reasons = judge(busy(3), deltas(foreign_processes=[{"pid": 77, "name": "python"}]))
    assert (trust, reasons) == (Trust.WARN, ["another process on the GPU: pid 77 (python)"])
    assert judge(busy(3), deltas(mig=True)) == (
        Trust.WARN, ["MIG mode is on (the GPU is partitioned)"])  # fmt: skip


def test_untrusted_wins_and_every_reason_is_kept() -> None:
    samples = busy(3, clock_reasons=0x4 | 0x40)
    trust, reasons = judge(samples, deltas(mig=True))
    assert trust is Trust.UNTRUSTED
    assert reasons == [
        "HW thermal slowdown in 3 of 3 busy samples",
        "MIG mode is on (the GPU is partitioned)",
        "SW power cap in 3 of 3 busy samples",
    ]


def test_several_gpus_name_the_gpu() -> None:
    d = deltas()
    d["gpus"]["1"] = dict(d["gpus"]["0"])
    samples = busy(4) + [gpu_sample(gpu=1, clock_reasons=0x8)] * 4
    trust, reasons = judge(samples, d)
    assert trust is Trust.UNTRUSTED
    assert reasons == ["GPU 1: HW slowdown in 4 of 4 busy samples"]


def test_objects_work_as_well_as_dicts() -> None:
    from measure.telemetry.backend import Sample

    samples = [Sample(run_id="r", t_us=i, source="replay", gpu=0, sm_clock_mhz=1980.0,
                      clock_reasons=0x20, util_gpu=90.0) for i in range(4)]  # fmt: skip
    assert judge(samples, deltas())[0] is Trust.UNTRUSTED


def test_trust_values_match_the_session_model() -> None:
    from session.models import Trust as ModelTrust

    assert {t.value for t in Trust} == {t.value for t in ModelTrust}


def test_a_sample_with_the_idle_reason_is_not_busy_even_with_utilization_left() -> None:
    # taken just after the work ended: utilization still averages above zero, clocks fall
    tail = gpu_sample(util_gpu=40.0, clock_reasons=0x1, sm_clock_mhz=600.0)
    assert judge([*busy(6), tail], deltas()) == (Trust.CLEAN, [])
    assert judge([*busy(6), dict(tail, clock_reasons=0)], deltas())[0] is Trust.WARN
