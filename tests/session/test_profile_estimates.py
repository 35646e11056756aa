"""What a baseline profile says of a hypothesis before anything runs: its Amdahl ceiling and
the bytes a fusion would save (pure functions on a stored summary)."""

from __future__ import annotations

import pytest

from session.profile.check import estimate

SUMMARY = {
    "ops_by_name": [
        {"name": "aten::_softmax", "share": 0.6},
        {"name": "aten::softmax", "share": 0.05},
        {"name": "aten::mm", "share": 0.25},
        {"name": "aten::add", "share": 0.1},
    ],
    "pairs": [
        {"producer": "aten::mm", "consumer": "aten::add", "bytes": 1 << 24, "saved_bytes": 1 << 25},
    ],
}


def test_an_op_named_in_words_gets_its_amdahl_ceiling():
    e = estimate("the softmax pass dominates", SUMMARY)
    assert e.names == ["aten::_softmax", "aten::softmax"]
    assert e.share == pytest.approx(0.65) and e.amdahl == pytest.approx(1 / 0.35)
    assert "at most 2.86x faster (Amdahl)" in e.lines[0]
    assert e.fusion_saved_bytes is None  # no materialization named


def test_a_materialization_hypothesis_gets_the_bytes_a_fusion_saves():
    e = estimate("fuse the bias add into the matmul epilogue: no 16 MiB intermediate", SUMMARY)
    assert {"aten::mm", "aten::add"} <= set(e.names)
    assert e.fusion_saved_bytes == 1 << 25
    assert "fusing aten::mm → aten::add (16 MiB) saves about 32 MiB" in e.lines[-1]


def test_nothing_named_gives_nothing():
    e = estimate("caches are cold", SUMMARY)
    assert e.lines == [] and e.amdahl is None
