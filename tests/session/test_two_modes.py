"""An arm whose runs fell into two modes (measure.stats.mode_split: the allocator, the
kernel) makes its comparisons untrusted. The demo's no-op control read SLOWER 1.35× so: 12
of its 20 processes ran in the slow mode and none of the baseline's did, a difference of
processes, not of code. The flag was only a note beside the verdict; now the verdict says
it, everywhere the one rule is read (shown_verdict), and keep-default refuses it."""

from __future__ import annotations

import pytest
from method_factory import (
    error_stats,
    make_baseline,
    make_comparison,
    make_correctness,
    make_round,
    make_session,
    make_variant,
    open_ledger,
)

from session import models as m
from session import timing
from session.dispositions import dispose
from session.gates import GateRefusal
from session.verdicts import shown_verdict

GOOD_DEFAULT = dict(
    optimization_class="C2",
    guards=["last dimension <= 4096"],
    fallback="the unfused path",
)


def _flag(arm: str, workload: str, arm_id: str | None = None) -> dict[str, object]:
    flag: dict[str, object] = {
        "arm": arm,
        "workload": workload,
        "runs": [6, 12],
        "between": 2,
        "text": f"{arm}/{workload}: values split into two modes (0.38–0.40 and 0.68–0.70)",
    }
    if arm_id is not None:
        flag["arm_id"] = arm_id
    return flag


def _round(flags: list[dict[str, object]]) -> m.Round:
    return m.Round(
        session_id="s0000000000a",
        baseline_id="b0000000000a",
        variant_ids=["v1", "v2"],
        status=m.RoundStatus.COMPLETED,
        blocks=20,
        min_blocks=20,
        summary={"arms": {"baseline": "baseline", "v1": "same", "v2": "fused"},
                 "timing_flags": flags},
    )  # fmt: skip


def _comparison(variant: str, workload: str = "t", verdict=m.Verdict.SLOWER) -> m.Comparison:
    ratio = {m.Verdict.SLOWER: 1.35, m.Verdict.FASTER: 0.5, m.Verdict.SAME: 1.0}[verdict]
    return m.Comparison(
        round_id="r", variant_id=variant, workload=workload, n=20, ratio=ratio,
        ci_low=ratio * 0.9, ci_high=ratio * 1.1, verdict=verdict,
    )  # fmt: skip


def test_a_variant_that_ran_in_two_modes_has_an_untrusted_verdict_and_says_why() -> None:
    rnd = _round([_flag("same", "t", "v1")])
    shown = shown_verdict(_comparison("v1"), round=rnd)
    assert shown.word == "SLOWER" and not shown.trusted
    assert "same's runs on t fell into two modes" in shown.untrusted_why
    assert shown.text.endswith("· untrusted")
    # the other variant, and the flagged arm's other workload, are not touched
    assert shown_verdict(_comparison("v2", verdict=m.Verdict.FASTER), round=rnd).trusted
    assert shown_verdict(_comparison("v1", workload="u"), round=rnd).trusted


def test_a_baseline_in_two_modes_makes_every_comparison_of_its_workload_untrusted() -> None:
    rnd = _round([_flag("baseline", "t", "baseline")])
    for variant, verdict in (("v1", m.Verdict.SAME), ("v2", m.Verdict.FASTER)):
        shown = shown_verdict(_comparison(variant, verdict=verdict), round=rnd)
        assert not shown.trusted and "the baseline's runs on t fell into two modes" in (
            shown.untrusted_why
        )
    assert shown_verdict(_comparison("v2", workload="u"), round=rnd).trusted


def test_a_flag_stored_before_arm_ids_is_matched_by_the_rounds_arm_names() -> None:
    rnd = _round([_flag("same", "t")])  # no arm_id: a ledger written by an older gpuopt
    assert not shown_verdict(_comparison("v1"), round=rnd).trusted
    assert shown_verdict(_comparison("v2", verdict=m.Verdict.FASTER), round=rnd).trusted


def test_the_flags_name_the_arm_by_its_id_too() -> None:
    runs = [
        m.Run(session_id="s", arm="v1", workload="t", block=i + 1, value=v)
        for i, v in enumerate([0.38, 0.39, 0.385, 0.395, 0.382, 0.391] + [0.69, 0.7, 0.68] * 4)
    ]
    (flag,) = timing.bimodal_flags(runs, {"v1": "same"})
    assert (flag["arm"], flag["arm_id"], flag["workload"]) == ("same", "v1", "t")


def test_keep_default_is_refused_for_a_variant_that_ran_in_two_modes(tmp_path) -> None:
    with open_ledger(tmp_path) as ledger:
        s = make_session(ledger)
        b = make_baseline(ledger, s)
        v = make_variant(ledger, s)
        rnd = make_round(ledger, s, b, [v])
        rnd.summary = {"arms": {"baseline": "baseline", v.id: v.name},
                       "timing_flags": [_flag(v.name, "e2e", v.id)]}  # fmt: skip
        ledger.put(rnd)
        make_comparison(ledger, rnd, v)  # FASTER on e2e
        make_correctness(ledger, s, v, stats=[error_stats()])
        with pytest.raises(GateRefusal) as info:
            dispose(ledger, s, v, "keep-default", **GOOD_DEFAULT)
    assert "fell into two modes" in info.value.reason


def test_a_round_whose_variant_runs_in_two_modes_stores_an_untrusted_verdict(
    tmp_path, make_repo, monkeypatch
) -> None:
    """End to end, real processes: the variant prints 1.0 or 1.7 by turns, process by
    process (a counter outside the tree), as an allocator's modes would split its runs."""
    from conftest import run_git

    from ledger import Ledger
    from session import conduct as c

    counter = tmp_path / "count"
    monkeypatch.setenv("MODES_COUNTER", str(counter))
    repo = make_repo(files={"v.sh": "echo 1.00$$ | cut -c1-6\n"})
    metric = m.Metric(
        name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit=""
    )
    contract = m.Contract(metric=metric, workloads=[m.Workload(name="read", command="sh v.sh")])
    two = (
        'n=$(cat "$MODES_COUNTER" 2>/dev/null || echo 0); echo $((n + 1)) > "$MODES_COUNTER"\n'
        "if [ $((n % 2)) = 0 ]; then echo 1.00$$ | cut -c1-6; else echo 1.70$$ | cut -c1-6; fi\n"
    )
    (repo / "v.sh").write_text(two)
    patch = tmp_path / "two.diff"
    patch.write_text(run_git(repo, "diff", "--", "v.sh"))
    run_git(repo, "checkout", "--", "v.sh")
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = m.Session(title="t", repo=str(repo), contract=contract)
        ledger.put(session)
        c.record_baseline(ledger, session, runs=8, warmup=0)
        variant = c.add_variant(ledger, session, "modes", patch=patch)
        rnd = c.run_round(ledger, session, min_blocks=20, max_blocks=20, seed=3)
        (comp,) = ledger.list(m.Comparison, round_id=rnd.id)
    flags = rnd.summary.get("timing_flags") or []
    assert [(f["arm_id"], f["workload"]) for f in flags] == [(variant.id, "read")], flags
    shown = shown_verdict(comp, round=rnd)
    assert not shown.trusted and "modes's runs on read fell into two modes" in shown.untrusted_why
