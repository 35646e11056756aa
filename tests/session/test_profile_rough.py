"""A profiled step far from the round's figure is said to be rough, with the factor (a
step 13× the round's figure under load carried no warning before)."""

from __future__ import annotations

from session.profile.text import fact_lines


def _summary(**more: object) -> dict[str, object]:
    s: dict[str, object] = {"device": "cpu", "dtype": "float32", "profiled_steps": 3,
                            "step_ms": 6.5, "step_ms_samples": [6.5, 6.6, 6.7]}  # fmt: skip
    s.update(more)
    return s


def test_a_step_thirteen_times_the_rounds_figure_is_rough() -> None:
    facts = fact_lines(_summary(round_ms=0.5))
    [rough] = [line for line in facts if line.startswith("rough:")]
    assert rough.startswith("rough: the step took 13× the round's figure (0.5 ms per call)")


def test_a_step_near_the_rounds_figure_is_not() -> None:
    assert not [x for x in fact_lines(_summary(round_ms=5.0)) if x.startswith("rough:")]
    assert not [x for x in fact_lines(_summary()) if x.startswith("rough:")]


def _pairs(n: int) -> list[dict[str, object]]:
    return [{"producer": f"aten::op{i}", "consumer": f"aten::op{i + 1}", "bytes": 1024,
             "saved_bytes": 2048} for i in range(n)]  # fmt: skip


def test_the_pair_count_said_is_the_pairs_listed() -> None:
    from session.profile.text import pair_rows

    s = _summary(pairs=_pairs(6), pair_count=6)
    [line] = [x for x in fact_lines(s) if "write/read pair" in x]
    assert line.startswith("6 write/read pair(s); fusing them all")
    assert len(pair_rows(s)) == 6  # the command listed 5 of them
    cut = _summary(pairs=_pairs(40), pair_count=47)
    [line] = [x for x in fact_lines(cut) if "write/read pair" in x]
    assert line.startswith("47 write/read pair(s) (the 40 largest are listed)")
