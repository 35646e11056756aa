"""The residual reads the mechanism from profiles when both arms have one; the person's flag
overrides it and the reasons say so."""

from __future__ import annotations

from session import models as m
from session.residuals import classify

R = m.ResidualClass
FASTER = [m.Comparison(round_id="r", variant_id="v", workload="w", n=10, verdict=m.Verdict.FASTER)]


def _summary(ops: int, inter: int) -> dict:
    rows = [{"kind": "intermediate", "bytes": inter, "producer": "aten::sub"}] if inter else []
    return {
        "workload": "w",
        "launches": ops,
        "operator_count": ops,
        "work": {"bytes": 1000 * ops, "flops": 10},
        "intermediates": rows,
        "intermediate_count": len(rows),
        "largest_intermediate": rows[0] if rows else None,
        "live_peak": {"bytes": 100 + inter},
        "dominant": {"name": "aten::exp", "share": 0.5},
    }


def test_profile_movement_decides_without_audits():
    moved = ({"w": _summary(5, 1 << 19)}, {"w": _summary(1, 0)})
    got = classify(
        improve=True, comparisons=FASTER, variant_id="v",
        predicted_evidence="launches 5→1", profiles=moved,
    )  # fmt: skip
    assert got.suggested is R.AS_PREDICTED and "launches" in got.explanation
    same = ({"w": _summary(5, 1 << 19)}, {"w": _summary(5, 1 << 19)})
    still = classify(
        improve=True, comparisons=FASTER, variant_id="v",
        predicted_evidence="launches 5→1", profiles=same,
    )  # fmt: skip
    assert still.suggested is R.METRIC_ONLY and "did not hold" in still.explanation


def test_profile_moving_the_wrong_way_is_the_opposite_sign():
    worse = ({"w": _summary(5, 0)}, {"w": _summary(8, 0)})
    got = classify(
        improve=True, comparisons=FASTER, variant_id="v",
        predicted_evidence="fewer launches", profiles=worse,
    )  # fmt: skip
    assert got.suggested is R.OPPOSITE_SIGN


def test_the_flag_is_an_override_recorded_as_such():
    moved = ({"w": _summary(5, 1 << 19)}, {"w": _summary(1, 0)})
    got = classify(
        improve=True, comparisons=FASTER, variant_id="v",
        predicted_evidence="launches 5→1", profiles=moved, mechanism_moved=False,
    )  # fmt: skip
    assert got.suggested is R.METRIC_ONLY
    assert got.explanation.count("your override") == 1
    assert "measured, it moved as predicted" in got.explanation
    agree = classify(improve=True, comparisons=FASTER, variant_id="v", profiles=moved,
                     mechanism_moved=True)  # fmt: skip
    assert "the measurement agrees" in agree.explanation
