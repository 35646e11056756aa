"""A profile in words says what its numbers are: the time per step is from steps timed apart
from the profiled ones, a wide spread of step times is a warning, a boundary nothing crosses
is no "most frequent" one, achieved FLOP/s above a measured probe is said as such, no work is
"no work measured", and FLOP counts carry units."""

from __future__ import annotations

from typing import Any

from measure.profiling import roofline
from session.profile.check import compare
from session.profile.text import fact_lines, roofline_lines, shared_rows


def _summary(**more: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "device": "cpu",
        "dtype": "float32",
        "profiled_steps": 300,
        "step_ms": 0.49,
        "step_ms_samples": [0.49, 0.5, 0.52, 0.55, 0.6],
        "launches": 2,
        "launch_source": "computing top-level aten ops (CPU)",
        "sequence": ["aten::matmul", "aten::sum"],
        "boundaries": [{"from": "aten::matmul", "to": "aten::sum", "count": 1, "bytes": 0}],
        "most_frequent_boundary": {
            "from": "aten::matmul",
            "to": "aten::sum",
            "count": 1,
            "bytes": 0,
        },
    }
    s.update(more)
    return s


def test_the_steps_profiled_and_the_steps_timed_are_told_apart() -> None:
    facts = fact_lines(_summary())
    assert "300 step(s) profiled" in facts[0]
    assert facts[1] == (
        "time per step 0.49 ms: the fastest of 5 steps timed before the profiled ones "
        "(profiling distorts time; not the timing's figure)"
    )
    assert not any(line.startswith("warning") for line in facts)


def test_a_wide_spread_of_step_times_is_a_warning() -> None:
    facts = fact_lines(_summary(step_ms_samples=[0.49, 2.0, 50.0, 123.0, 7.0]))
    [warning] = [line for line in facts if line.startswith("warning")]
    assert "from 0.49 to 123 ms (max/min 251×)" in warning


def test_a_boundary_seen_once_with_nothing_across_it_is_not_most_frequent() -> None:
    facts = "\n".join(fact_lines(_summary()))
    assert "aten::matmul → aten::sum" not in facts
    assert "most frequent operator boundary: none" in facts
    named = _summary(
        most_frequent_boundary={"from": "aten::exp", "to": "aten::sum", "count": 4, "bytes": 512}
    )
    assert "most frequent operator boundary aten::exp → aten::sum (4×, 512 B across it)" in (
        fact_lines(named)
    )


def test_shared_intermediates_have_rows_of_their_own() -> None:
    s = _summary(
        shared_intermediates=[
            {"producer": "aten::exp", "consumers": ["aten::sum", "aten::div"],
             "bytes": 524288, "saved_bytes": 3 * 524288}
        ]
    )  # fmt: skip
    assert shared_rows(s) == [("aten::exp", "aten::sum, aten::div", "512 KiB", "1.5 MiB")]


def test_achieved_flops_above_the_measured_probe_is_said_so() -> None:
    probe = {"bandwidth_bytes_per_s": 1e10, "flops_per_s": 38.4e9, "how": "matmul probe"}
    pos = roofline.position(
        step_s=1e-3, flops=43.4e6, nbytes=1e3, launches=None, ceilings=roofline.measured(probe)
    )
    text = " ".join(pos.reasons)
    assert "43.4 GFLOP/s (above the measured compute probe, a lower bound of the ceiling)" in text
    assert "113%" not in text


def test_no_flops_and_no_bytes_is_no_work_measured() -> None:
    s = _summary(work={"flops": 0, "bytes": 0}, roofline={"intensity": None})
    [line] = roofline_lines(s)
    assert line == "work: no work measured (no FLOPs counted and no bytes moved per step)"
    assert "intensity" not in line


def test_flop_counts_in_the_movement_lines_carry_units() -> None:
    lines = compare(
        _summary(work={"flops": 655360, "bytes": 1}), _summary(work={"flops": 131072, "bytes": 1})
    ).lines()
    assert "FLOPs per step 655 kFLOP → 131 kFLOP" in lines
    same = compare(
        _summary(work={"flops": 6.72399e7, "bytes": 1}),
        _summary(work={"flops": 6.71744e7, "bytes": 1}),
    ).lines()
    assert "FLOPs per step 67.2 MFLOP → 67.2 MFLOP (unchanged)" in same
