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
from test_gates import GOOD_DEFAULT  # a default the other gates let through

from session import models as m
from session import timing
from session.dispositions import dispose
from session.gates import GateRefusal
from session.verdicts import shown_verdict


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
    assert "the runs of same on t fell into two modes" in shown.untrusted_why
    assert shown.text.endswith("· untrusted")
    # the other variant, and the flagged arm's other workload, are not touched
    assert shown_verdict(_comparison("v2", verdict=m.Verdict.FASTER), round=rnd).trusted
    assert shown_verdict(_comparison("v1", workload="u"), round=rnd).trusted


def test_a_baseline_in_two_modes_makes_every_comparison_of_its_workload_untrusted() -> None:
    rnd = _round([_flag("baseline", "t", "baseline")])
    for variant, verdict in (("v1", m.Verdict.SAME), ("v2", m.Verdict.FASTER)):
        shown = shown_verdict(_comparison(variant, verdict=verdict), round=rnd)
        assert not shown.trusted and "the runs of the baseline on t fell into two modes" in (
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


def _two_mode_round(tmp_path, make_repo, monkeypatch, **round_kw):  # type: ignore[no-untyped-def]
    """A round on real processes whose variant prints 1.0 or 1.7 by turns, process by
    process (a counter outside the tree), as an allocator's modes would split its runs:
    the stored round, the variant and its comparison."""
    from conftest import run_git

    from ledger import Ledger
    from session import conduct as c

    monkeypatch.setenv("MODES_COUNTER", str(tmp_path / "count"))
    repo = make_repo(files={"v.sh": "echo 1.00$(($$ % 89 + 10))\n"})
    metric = m.Metric(
        name="value", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)", unit=""
    )
    contract = m.Contract(metric=metric, workloads=[m.Workload(name="read", command="sh v.sh")])
    two = (
        'n=$(cat "$MODES_COUNTER" 2>/dev/null || echo 0); echo $((n + 1)) > "$MODES_COUNTER"\n'
        "if [ $((n % 2)) = 0 ]; then echo 1.00$(($$ % 89 + 10)); "
        "else echo 1.70$(($$ % 89 + 10)); fi\n"
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
        try:
            c.run_round(ledger, session, seed=3, **round_kw)
        except KeyboardInterrupt:
            pass
        (rnd,) = ledger.list(m.Round, session_id=session.id)
        (comp,) = ledger.list(m.Comparison, round_id=rnd.id)
    return rnd, variant, comp


def test_a_round_whose_variant_runs_in_two_modes_stores_an_untrusted_verdict(
    tmp_path, make_repo, monkeypatch
) -> None:
    rnd, variant, comp = _two_mode_round(
        tmp_path, make_repo, monkeypatch, min_blocks=20, max_blocks=20
    )
    flags = rnd.summary.get("timing_flags") or []
    assert [(f["arm_id"], f["workload"]) for f in flags] == [(variant.id, "read")], flags
    shown = shown_verdict(comp, round=rnd)
    assert not shown.trusted and "the runs of modes on read fell into two modes" in (
        shown.untrusted_why
    )


class _StopAfter:
    """A monitor that says nothing of the runs and stops the round (Ctrl+C) after `n`."""

    def __init__(self, n: int) -> None:
        self.n, self.finished = n, 0

    def run_started(self, run_id: str, pid: int | None) -> None:
        pass

    def run_finished(self, run_id: str):  # type: ignore[no-untyped-def]
        from measure.monitor import RunObservation

        self.finished += 1
        if self.finished == self.n:
            raise KeyboardInterrupt
        return RunObservation(trust=m.Trust.CLEAN, reasons=[])


def test_a_round_interrupted_after_its_minimum_still_flags_its_modes(
    tmp_path, make_repo, monkeypatch
) -> None:
    """Stopped after its minimum of blocks, a round's verdicts stand (the gates allow a
    keep from it): its arms' modes are judged as a finished round's are."""
    rnd, variant, comp = _two_mode_round(
        tmp_path, make_repo, monkeypatch, min_blocks=20, max_blocks=40, monitor=_StopAfter(46)
    )
    assert rnd.status is m.RoundStatus.INTERRUPTED and rnd.blocks >= rnd.min_blocks
    flags = rnd.summary.get("timing_flags") or []
    assert [(f["arm_id"], f["workload"]) for f in flags] == [(variant.id, "read")], flags
    assert any("two modes" in note for note in rnd.summary["notes"])
    assert not shown_verdict(comp, round=rnd).trusted


@pytest.mark.parametrize(
    "values",
    [[5.0] * 12 + [6.0] * 8, [12.0] * 10 + [14.0] * 10, [0.0012] * 14 + [0.0014] * 6],
)
def test_a_metric_of_a_few_steps_is_not_two_modes(values: list[float]) -> None:
    """A count or a rounded figure takes a few values only: no spread inside either group
    to hold a gap against, so no flag (a flag makes the comparisons untrusted)."""
    runs = [
        m.Run(session_id="s", arm="v1", workload="t", block=i + 1, value=v)
        for i, v in enumerate(values)
    ]
    assert timing.bimodal_flag(runs) is None
    # measured figures, with a spread inside each group, still split
    for i, run in enumerate(runs):
        run.value = (5.0 if i < 12 else 8.0) * (1 + 0.004 * (i % 5))
    assert timing.bimodal_flag(runs) is not None


def test_the_record_says_a_two_mode_verdict_is_untrusted_in_each_table_and_the_json(
    tmp_path,
) -> None:
    """The file's table, the Record step's narrow one (80 columns) and the JSON all read
    the comparison's own trust; the narrow table read the round's alone before."""
    from test_record_fix_tester import _baseline, _record, _round, _session, _variant

    from session.record import to_markdown

    def build(ledger):  # type: ignore[no-untyped-def]
        s = _session(ledger)
        b = _baseline(ledger, s)
        split, calm = _variant(ledger, s, "split", 2), _variant(ledger, s, "calm", 3)
        r = _round(ledger, s, b, 1, [split, calm])
        workload = ledger.list(m.Comparison, round_id=r.id)[0].workload
        r.summary = {"arms": {"baseline": "baseline", split.id: "split", calm.id: "calm"},
                     "timing_flags": [_flag("split", workload, split.id)]}  # fmt: skip
        ledger.put(r)
        return s

    x, md = _record(tmp_path, build)
    narrow = to_markdown(x, fit=80)
    assert "| variant | verdict | ratio (" in narrow  # the Record step's narrow table
    assert "| variant | workload | verdict |" in md  # the file's
    for layout in (md, narrow):
        head = layout[: layout.index("# Details")]
        (split_row,) = [ln for ln in head.splitlines() if ln.startswith("| split")]
        (calm_row,) = [ln for ln in head.splitlines() if ln.startswith("| calm")]
        assert "untrusted" in split_row and "untrusted" not in calm_row, (split_row, calm_row)
    rows = {r.variant: r for r in x.summary.rows}
    assert (rows["split"].trusted, rows["calm"].trusted) == (False, True)
    assert rows["split"].round_trusted  # the round itself is fine: its other verdict stands
