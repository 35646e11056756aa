"""The decision record says how to read its ratios, for either metric direction."""

from __future__ import annotations

from test_record import _export, texts

from session.record import to_markdown


def test_the_record_explains_the_ratio_for_a_lower_is_better_metric(tmp_path):
    data = _export(tmp_path, texts())
    assert data["session"]["direction"] == "lower"
    md = to_markdown(data)
    assert "ratio = variant / baseline" in md


def test_the_record_explains_the_inverted_ratio_for_a_higher_is_better_metric(tmp_path):
    data = _export(tmp_path, texts())
    data["session"]["direction"] = "higher"
    md = to_markdown(data)
    rounds = md.index("## Rounds")
    legend = md.index("ratio = baseline / variant", rounds)
    assert legend < md.index("| round | variant | workload |", rounds)
    assert "variant / baseline" not in md
