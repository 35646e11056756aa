"""session.drift_cause: which telemetry reasons name a cause for a baseline's drift, and
the repair each one comes with (only these block a round; drift without one warns)."""

from __future__ import annotations

from session.drift_cause import telemetry_cause


def test_no_reason_or_only_missing_telemetry_names_no_cause() -> None:
    assert telemetry_cause([]) is None
    assert telemetry_cause(["no GPU telemetry: NVML Shared Library Not Found"]) is None
    assert telemetry_cause(["MIG mode is on (the GPU is partitioned)"]) is None


def test_throttling_is_named_first_with_a_cool_down() -> None:
    got = telemetry_cause(
        [
            "SM clock spread 9% across busy samples (1800–1980 MHz)",
            "HW slowdown in 3 of 8 busy samples",
        ]
    )
    assert got is not None and got.kind == "throttling"
    assert "HW slowdown in 3 of 8" in got.words and "cool down" in got.repair


def test_clocks_changing_asks_to_lock_them() -> None:
    got = telemetry_cause(["median SM clock 900 MHz is 45% of its maximum 1980 MHz"])
    assert got is not None and got.kind == "clocks changing"
    assert "--lock-gpu-clocks" in got.repair


def test_another_process_is_named_with_its_pid() -> None:
    got = telemetry_cause(["GPU 1: another process on the GPU: pid 4242 (python)"])
    assert got is not None and got.kind == "another process on the GPU"
    assert "pid 4242 (python)" in got.repair
