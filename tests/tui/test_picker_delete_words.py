"""The picker's notice after a delete says where a kept variant's commit stays pinned."""

from __future__ import annotations

from session.manage import DeleteReport, RefLine
from tui.screens.picker import deleted_words


def test_a_kept_variants_pin_is_named() -> None:
    kept = RefLine(ref="refs/gpuopt/snapshots/abc", commit="a" * 40, what="variant fused (kept)")
    report = DeleteReport(
        session_id="s1",
        title="softmax",
        rows={"sessions": 1, "runs": 4},
        refs_kept=[kept],
        kept_as={kept.ref: "refs/gpuopt/kept/abc"},
    )
    words = deleted_words(report)
    assert "Deleted softmax: 5 rows" in words
    assert "pinned as refs/gpuopt/kept/abc (prune-refs never removes it)" in words
