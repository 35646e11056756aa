"""Defects an independent tester found in the rebuilt decision record, one test each.

Sessions are built by hand in a real ledger (as tests/session/test_broken_export.py does):
the record reads only what is stored, so each case is the stored shape that showed it.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ledger import Ledger
from session import models as m
from session.md import md_cell
from session.record import gather, to_json, to_markdown
from session.verdicts import CHECK_COMMAND

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
W = "w"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _snap(n: int) -> m.Snapshot:
    return m.Snapshot(id=f"snap{n:08d}", commit=f"{n:x}".rjust(40, "a"), ref=f"refs/x/{n}")


def _session(ledger: Ledger, env: m.EnvironmentFingerprint | None = None) -> m.Session:
    contract = m.Contract(
        metric=m.Metric(name="time", unit="s"),
        workloads=[m.Workload(name=W, command="bash run.sh")],
        check="true",
    )
    s = m.Session(id="5e55f1000001", title="fix", repo="/tmp/fixr/r", contract=contract,
                  created_at=at(0))  # fmt: skip
    ledger.put(s)
    return s


def _baseline(ledger: Ledger, s: m.Session, i: int = 0, **kw: Any) -> m.Baseline:
    b = m.Baseline(
        id=f"ba5ef100000{i}", session_id=s.id, snapshot=_snap(1),
        environment=kw.pop("environment", m.EnvironmentFingerprint(hostname="box")),
        contract_hash=s.contract.stable_hash(), reference={W: 0.2},
        reproducibility=kw.pop("reproducibility", m.Reproducibility.REPRODUCIBLE),
        created_at=at(i), **kw,
    )  # fmt: skip
    ledger.put(b)
    return b


def _variant(ledger: Ledger, s: m.Session, name: str, n: int = 2) -> m.Variant:
    v = m.Variant(id=f"va{n:010d}", session_id=s.id, name=name, snapshot=_snap(n),
                  created_at=at(2))  # fmt: skip
    ledger.put(v)
    return v


def _round(
    ledger: Ledger,
    s: m.Session,
    b: m.Baseline,
    number: int,
    variants: list[m.Variant],
    ratio: float = 0.5,
    verdict: m.Verdict = m.Verdict.FASTER,
    ci: tuple[float | None, float | None] | None = None,
) -> m.Round:
    r = m.Round(
        id=f"40df1000000{number}", session_id=s.id, baseline_id=b.id, number=number,
        variant_ids=[v.id for v in variants], seed=number, status=m.RoundStatus.COMPLETED,
        blocks=10, min_blocks=8, baseline_reproduced=True, started_at=at(10 * number),
        ended_at=at(10 * number + 5),
    )  # fmt: skip
    ledger.put(r)
    low, high = ci or (ratio * 0.95, ratio * 1.05)
    for v in variants:
        ledger.put(
            m.Comparison(
                round_id=r.id,
                variant_id=v.id,
                workload=W,
                n=10,
                ratio=ratio,
                ci_low=low,
                ci_high=high,
                verdict=verdict,
            )
        )
    return r


def _check(ledger: Ledger, s: m.Session, v: m.Variant, minute: float, passed: bool) -> None:
    ledger.put(
        m.CorrectnessResult(
            session_id=s.id,
            variant_id=v.id,
            workload=CHECK_COMMAND,
            passed=passed,
            exit_code=0 if passed else 1,
            created_at=at(minute),
        )
    )


def _keep(ledger: Ledger, s: m.Session, v: m.Variant, minute: float) -> None:
    ledger.put(
        m.Disposition(
            id="d0f100000001",
            session_id=s.id,
            variant_id=v.id,
            choice=m.DispositionChoice.KEEP_DEFAULT,
            optimization_class=m.OptimizationClass.NA,
            guards=["g"],
            fallback="f",
            reason="r",
            created_at=at(minute),
        )
    )


def _record(tmp_path: Path, build: Any) -> tuple[Any, str]:
    with Ledger.open(tmp_path / "l.db") as ledger:
        s = build(ledger)
        x = gather(ledger, s)
    return x, to_markdown(x)


def _summary_row(md: str, name: str) -> str:
    head = md[: md.index("# Details")]
    rows = [ln for ln in head.splitlines() if ln.startswith(f"| {name} |")]
    assert len(rows) == 1, rows
    return rows[0]


# ---------------------------------------------------------------------------- 1


def test_a_kept_variant_whose_check_fails_in_a_later_round_reads_broken(tmp_path):
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        b = _baseline(ledger, s)
        v = _variant(ledger, s, "fast")
        _round(ledger, s, b, 1, [v])
        _check(ledger, s, v, 11, passed=True)
        _keep(ledger, s, v, 16)
        _round(ledger, s, b, 2, [v])
        _check(ledger, s, v, 21, passed=False)
        return s

    x, md = _record(tmp_path, build)
    row = _summary_row(md, "fast")
    assert "BROKEN" in row and "FASTER" not in row
    assert "passes" not in row
    assert "keep as the default path on round 1; its check failed in round 2" in row
    assert "| round 2 |" in row
    assert x.summary.rows[0].round == 2


def test_a_flaky_check_says_it_failed_once(tmp_path):
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        b = _baseline(ledger, s)
        v = _variant(ledger, s, "fast")
        _round(ledger, s, b, 1, [v])
        _check(ledger, s, v, 11, passed=True)
        _round(ledger, s, b, 2, [v])
        _check(ledger, s, v, 21, passed=False)
        _round(ledger, s, b, 3, [v])
        _check(ledger, s, v, 31, passed=True)
        return s

    _, md = _record(tmp_path, build)
    row = _summary_row(md, "fast")
    assert "check command passes in round 3; failed in round 2" in row


# ---------------------------------------------------------------------------- 5, 6, 9, 10


def test_emphasis_characters_are_escaped_in_cells_and_text():
    cell = md_cell("a*b* and _c_ and ~~d~~")
    assert "*" not in cell.replace("\\*", "")
    assert "_" not in cell.replace("\\_", "")
    assert "~" not in cell.replace("\\~", "")
    # inside a word an underscore emphasizes nothing: names stay as they are pasted
    assert md_cell("CUDA_VISIBLE_DEVICES=0 nan_inf") == "CUDA_VISIBLE_DEVICES=0 nan_inf"


def test_a_hostile_stored_ratio_gives_strict_json_and_no_figure_that_reads_as_a_result(tmp_path):
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        b = _baseline(ledger, s)
        v = _variant(ledger, s, "odd")
        _round(ledger, s, b, 1, [v], ratio=float("nan"), ci=(-1e308, float("inf")))
        return s

    x, md = _record(tmp_path, build)

    def refuse(name: str) -> None:
        raise AssertionError(f"bare {name} in the JSON")

    data = json.loads(to_json(x), parse_constant=refuse)
    comp = data["rounds"][0]["comparisons"][0]
    assert comp["ratio"] is None and comp["ci_low"] == -1e308 and comp["ci_high"] is None
    assert comp["verdict"] != "FASTER"
    row = _summary_row(md, "odd")
    assert "FASTER" not in row
    low = md.lower()
    assert "nan" not in low.replace("nanoseconds", "") and "inf×" not in low
    assert not re.search(r"\d{20}", md)


def test_an_inconclusive_row_never_shows_a_bare_times_faster(tmp_path):
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        b = _baseline(ledger, s)
        v = _variant(ledger, s, "maybe")
        _round(ledger, s, b, 1, [v], ratio=0.526, verdict=m.Verdict.INCONCLUSIVE, ci=(None, None))
        return s

    _, md = _record(tmp_path, build)
    row = _summary_row(md, "maybe")
    assert "1.90× faster (—)" not in row
    assert "undecided" in row


def test_export_accepts_json_as_a_synonym_of_format_json(tmp_path, capsys):
    from tui.cli import main

    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        s = _session(ledger)
    assert main(["--ledger", str(db), "export", s.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["session"]["id"] == s.id


# ---------------------------------------------------------------------------- 2, 3, 4


def test_the_environment_is_the_one_of_the_baseline_in_use(tmp_path):
    pinned = m.EnvironmentFingerprint(hostname="box", variables={"CUDA_VISIBLE_DEVICES": "7"})
    plain = m.EnvironmentFingerprint(hostname="box")

    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        _baseline(ledger, s, 0, environment=pinned)
        b = _baseline(ledger, s, 1, environment=plain)
        _round(ledger, s, b, 1, [_variant(ledger, s, "fast")])
        return s

    _, md = _record(tmp_path, build)
    env = md[md.index("### Environment") :]
    env = env[: env.index("\n## ")]
    assert "As recorded with baseline ba5ef1000001" in env
    table = env[: env.index("\n\n", env.index("| field | value |"))]
    assert "VISIBLE" not in table
    assert "ba5ef1000000" in env and "CUDA_VISIBLE_DEVICES=7" in env


def test_many_unmeasured_variants_fold_into_one_line_and_the_summary_fits_40_lines(tmp_path):
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        b = _baseline(ledger, s)
        vs = [_variant(ledger, s, f"v{i:02d}", n=i + 2) for i in range(42)]
        _round(ledger, s, b, 1, vs[:2])
        return s

    x, md = _record(tmp_path, build)
    summary = md[: md.index("## Hypotheses")].rstrip("\n").splitlines()
    assert len(summary) <= 40, len(summary)
    folded = [ln for ln in summary if "40 more variants not measured yet" in ln]
    assert len(folded) == 1 and "v02, v03" in folded[0]
    assert len(x.summary.rows) == 42  # the JSON keeps every row


def test_many_measured_variants_still_fit_40_lines(tmp_path):
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        b = _baseline(ledger, s)
        vs = [_variant(ledger, s, f"v{i:02d}", n=i + 2) for i in range(48)]
        _round(ledger, s, b, 1, vs[:45])  # and 3 never measured
        return s

    _, md = _record(tmp_path, build)
    summary = md[: md.index("## Hypotheses")].rstrip("\n").splitlines()
    assert len(summary) <= 40, len(summary)
    assert any("more rows in the Rounds section" in ln for ln in summary)
    assert any("3 more variants not measured yet" in ln for ln in summary)


def test_the_summary_says_a_drifting_baseline_in_the_words_of_the_cli(tmp_path):
    from session.conduct import Outcome, outcome_words

    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        drift = m.Reproducibility.NOT_REPRODUCIBLE
        _baseline(
            ledger, s, reproducibility=drift, reproducibility_detail="drifting", threshold=0.02
        )
        return s

    _, md = _record(tmp_path, build)
    line = next(ln for ln in md.splitlines() if ln.startswith("- **Baseline:**"))
    assert outcome_words(Outcome.DRIFTING, 0.02) in line
    assert "drifting at ±2% (a warning: its absolute figures are unreliable)" in line


def test_the_summary_says_a_baseline_too_noisy_for_the_band(tmp_path):
    from session.conduct import Outcome, outcome_words

    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        _baseline(ledger, s, reproducibility=m.Reproducibility.TOO_NOISY, threshold=0.02)
        return s

    _, md = _record(tmp_path, build)
    line = next(ln for ln in md.splitlines() if ln.startswith("- **Baseline:**"))
    assert outcome_words(Outcome.TOO_NOISY, 0.02) in line


# ---------------------------------------------------------------------------- 7


def test_unreadable_variant_rows_are_said_to_be_left_out(tmp_path):
    import sqlite3

    db = tmp_path / "l.db"
    with Ledger.open(db) as ledger:
        s = _session(ledger)
        b = _baseline(ledger, s)
        vs = [_variant(ledger, s, "a", 2), _variant(ledger, s, "b", 3)]
        _round(ledger, s, b, 1, vs)
    with sqlite3.connect(db) as con:  # what a newer or damaged writer may leave
        con.execute("UPDATE variants SET data = json_set(data, '$.snapshot', 'x')")
    with Ledger.open(db) as ledger:
        stored = ledger.get(m.Session, s.id)
        assert stored is not None
        x = gather(ledger, stored)
    md = to_markdown(x)
    head = md[: md.index("## Hypotheses")]
    assert "No variant yet." not in head
    assert "2 variant rows could not be read" in head


# ---------------------------------------------------------------------------- 8


def test_stored_values_read_as_words(tmp_path):
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        b = _baseline(ledger, s)
        h = m.Hypothesis(id="4ff100000001", session_id=s.id, title="fuse", created_at=at(1))
        v = _variant(ledger, s, "fast")
        ledger.put(
            h,
            m.HypothesisEvent(
                hypothesis_id=h.id, field="edited", from_value="",
                to_value="performance_evidence, fusion_and_layout",
                why="concern areas suggested from the facts (performance_evidence: a "
                "profile; fusion_and_layout: peak memory changed (softmax: 1049600 -> "
                "1049088 bytes))",
                at=at(1),
            ),
            m.Evidence(id="813abb5bae01", session_id=s.id, kind=m.EvidenceKind.TORCH_PROFILE,
                       title="profile of the step", path="/tmp/fixr/p.json",
                       created_at=at(1)),
            m.CorrectnessResult(
                session_id=s.id, variant_id=v.id, workload=W, passed=True,
                options={"worker_options": {"device": "cpu", "warm_up": 2},
                         "stress": ["x100", "x1e-3", "zeros", "nan_inf"]},
                created_at=at(11),
            ),
        )  # fmt: skip
        _round(ledger, s, b, 1, [v])
        return s

    _, md = _record(tmp_path, build)
    assert "(torch_profile)" not in md and "torch\\_profile" not in md
    plan = md[md.index("## Measurement plan") :]
    assert "torch profile" in plan
    history = md[md.index("History:") :]
    history = history[: history.index("\n\n", history.index("| when |"))]
    assert "performance evidence: a profile" in history
    assert "fusion and layout" in history and "\\_" not in history
    assert "1049600" not in history and "1 MiB → 1 MiB (−512 B)" in history
    assert "worker options | device cpu; warm up 2 |" in md
    assert "stress | x100, x1e-3, zeros, nan inf |" in md
