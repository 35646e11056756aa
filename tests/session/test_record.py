"""The decision record: golden markdown of a full session, property-based safety of the
markdown (any unicode in any field) and the JSON round trip."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from method_full import TEXT_KEYS, build_full_session, texts
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from ledger import Ledger
from session.record import build_export, md_cell, md_code, to_json, to_markdown

GOLDEN = Path(__file__).parent / "golden" / "full_session.md"
GOLDEN_JSON_KEYS = {
    "format",
    "version",
    "session",
    "contract",
    "steps",
    "workloads",
    "baselines",
    "preflight",
    "checklist",
    "hypotheses",
    "evidence",
    "variants",
    "rounds",
    "correctness",
    "audits",
    "residuals",
    "dispositions",
    "measurement_plan",
}


def _export(tmp: Path, t: dict[str, str]) -> dict:
    with Ledger.open(tmp / "ledger.db") as ledger:
        session = build_full_session(ledger, t)
        return build_export(ledger, session)


def outside_fences(md: str) -> list[str]:
    """The lines of a markdown text that are not inside fenced code blocks."""
    out, fence = [], None
    for line in md.split("\n"):
        mt = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence is None and mt:
            fence = mt.group(1)
            continue
        if fence is not None:
            if re.match(rf"^ {{0,3}}{fence[0]}{{{len(fence)},}}\s*$", line):
                fence = None
            continue
        out.append(line)
    assert fence is None, "a code fence was never closed"
    return out


def check_tables(md: str) -> int:
    """Every table row has as many cells as its header; returns the number of tables."""
    lines = outside_fences(md)
    tables = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if (
            line.startswith("|")
            and i + 1 < len(lines)
            and re.fullmatch(r"\|( --- \|)+", lines[i + 1])
        ):
            tables += 1
            cells = line.count("|") - 1
            assert lines[i + 1].count("|") - 1 == cells
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                row = lines[i]
                assert row.count("|") - 1 == cells, (
                    f"row has {row.count('|') - 1} cells, not {cells}: {row!r}"
                )
                assert row.endswith(" |") and "\r" not in row
                i += 1
            assert i == len(lines) or lines[i] == "", (
                f"table not ended by a blank line: {lines[i]!r}"
            )
            continue
        assert not line.startswith("|"), f"a table row outside a table: {line!r}"
        i += 1
    return tables


# ---------------------------------------------------------------------------- golden


class GoldenMarkdown(SingleFileSnapshotExtension):
    """syrupy's single-file snapshot, kept as tests/session/golden/full_session.md
    (update: pytest tests/session/test_record.py --snapshot-update)."""

    _write_mode = WriteMode.TEXT
    _file_extension = "md"

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(GOLDEN.parent)

    @classmethod
    def get_snapshot_name(cls, *, test_location: Any, index: Any = 0) -> str:
        return GOLDEN.stem


def test_golden_markdown_of_a_full_session(tmp_path, snapshot):
    data = _export(tmp_path, texts())
    md = to_markdown(data)
    assert md == snapshot(extension_class=GoldenMarkdown)
    assert check_tables(md) > 20


def test_full_record_has_every_part(tmp_path):
    data = _export(tmp_path, texts())
    assert set(data) >= GOLDEN_JSON_KEYS
    # the keys the README documents keep their meaning
    assert data["format"] == "gpuopt-session" and data["version"] == 2
    assert {"id", "title", "repo", "metric", "direction", "unit"} <= set(data["session"])
    b = data["baselines"][0]
    assert b["baseline_id"] == "ba5e11000001" and b["reproducible"] is True
    assert {"commit", "ref", "dirty"} <= set(b["snapshot"]) and b["environment"]["gpus"]
    v = data["variants"][0]
    assert {"id", "name", "hypothesis_id", "snapshot", "probe"} <= set(v)
    r = data["rounds"][0]
    assert {"id", "baseline_id", "status", "blocks", "baseline_check", "comparisons"} <= set(r)
    c = r["comparisons"][0]
    assert {"variant", "workload", "ratio", "ci_low", "ci_high", "verdict", "n"} <= set(c)
    assert c["trust"] == {"clean": 1, "warn": 1}
    assert {"variant", "workload", "passed", "stats"} <= set(data["correctness"][0])
    d = data["dispositions"][0]
    assert {"variant", "choice", "class", "guards", "fallback", "reopen_when"} <= set(d)
    assert d["open_questions"] == ["backing", "identity", "schedule"]
    # history, round summary, plan
    h = data["hypotheses"][0]
    assert [e["field"] for e in h["history"]] == ["created", "confidence", "status"]
    assert r["search_round"]["next"].startswith("re-profile")
    assert "fused" in r["search_round"]["variants"]
    plan = data["measurement_plan"]
    figures = [p["figure"] for p in plan]
    assert "reference results of baseline ba5e11000001" in figures
    assert "comparisons of round 1" in figures
    rnd = next(p for p in plan if p["figure"] == "comparisons of round 1")
    assert "refs/gpuopt/snapshots/snap00000002" in rnd["refs"]
    assert any(
        "gpuopt round 5e5510000001 --variants fused,skip-softmax" in x for x in rnd["commands"]
    )
    base = plan[0]
    # as the runner runs them: the launcher, then bash -c with the whole command quoted
    assert any(x.endswith("bash -c 'python bench.py --only softmax'") for x in base["commands"])
    assert any("srun -N1 --gpus=1 bash -c 'python train.py" in x for x in base["commands"])


def test_md_cell_escapes_what_breaks_tables():
    cell = md_cell("a|b\nc`d`<script>&\\e\r\u2028f\x00[x](y)")
    assert "|" not in cell and "\n" not in cell and "`" not in cell and "<" not in cell
    assert "\\" not in cell and "\u2028" not in cell and "\x00" not in cell
    assert "&#124;" in cell and "&lt;script&gt;" in cell and "&amp;" in cell
    assert md_cell("") == md_cell(None) == md_cell("   ") == md_cell(" ") == "—"
    assert md_cell("a  b") == "a b" and "&nbsp;" not in md_cell("  x  ")


def test_md_code_fence_outlasts_backticks():
    block = md_code(["echo ```` inside", "ok"])
    assert block[0] == "`````sh" and block[-1] == "`````"
    assert outside_fences("\n".join(["x", *block, "y"])) == ["x", "y"]


# ---------------------------------------------------------------------------- properties

nasty = st.text(alphabet="|`\\\n\r<>&[]*_#-:~ \t\u2028\u0085\x00\x0b\u00a0é漢😀", max_size=12)
anything = st.text(max_size=30)
field_text = st.one_of(anything, nasty, st.tuples(anything, nasty).map("".join))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({k: field_text for k in TEXT_KEYS}))
@pytest.mark.slow
def test_any_text_keeps_tables_whole_and_json_round_trips(values):
    with tempfile.TemporaryDirectory() as tmp:
        data = _export(Path(tmp), texts(**values))
    md = to_markdown(data)
    check_tables(md)
    body = "\n".join(outside_fences(md))
    assert "<" not in body and "`" not in body  # no HTML and no code spans from typed text
    back = json.loads(to_json(data))
    assert back == data
    h = back["hypotheses"][0]
    for key in ("symptom", "mechanism", "predicted_effect", "falsifier", "confounders", "cost"):
        assert h[key] == values[key]
    d = back["dispositions"][0]
    assert d["failure_cases"] == (
        [values["failure_case"]] if values["failure_case"].strip() else []
    )
    rnd = back["rounds"][0]["search_round"]
    assert rnd["next"] == (values["summary_next"] or rnd["next"])


@pytest.mark.parametrize("key", ["mechanism", "guard", "command_b", "title", "variant_name"])
def test_a_pipe_newline_and_backticks_in_one_field(tmp_path, key):
    data = _export(tmp_path, texts(**{key: "x | y\n```\n| z |`w`"}))
    md = to_markdown(data)
    check_tables(md)


def test_export_of_an_empty_session_reads_only(tmp_path):
    from method_factory import make_session

    path = tmp_path / "ledger.db"
    with Ledger.open(path) as ledger:
        make_session(ledger)
    before = path.read_bytes()
    with Ledger.open(path, readonly=True) as ledger:
        data = build_export(ledger, ledger.resolve_session("5e55"))
    md = to_markdown(data)
    check_tables(md)
    assert "No baseline recorded yet." in md and "Nothing measured yet." in md
    assert [s["state"] for s in data["steps"]][:2] == ["done", "not_started"]
    assert path.read_bytes() == before
    assert json.loads(to_json(data)) == data
