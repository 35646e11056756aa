"""The record's first screen (issue 22): the band the verdicts rest on, the two baseline
medians each named, no HTML entities on a terminal, and a baseline's outcome said once."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from test_record_fix_tester import W, _baseline, _record, _round, _session, _variant

from ledger import Ledger
from session import models as m
from session.md import for_terminal, md_cell
from session.record.baselines import said_once
from session.record.summary import MAX_LINES, MEDIANS_IN_ROUND

ROOT = Path(__file__).resolve().parents[2]
NOISY = "too noisy for ±2%"
DETAIL = (
    f"{NOISY}; {W}: {NOISY} after 12 runs (second half / first 0.981, 99% CI 0.863–1.113); "
    "run-to-run noise CV 6.2%, MAD 4.7%; the narrowest band this noise supports in 12 runs "
    "is ±4.5%"
)


def _widened(ledger: Ledger) -> m.Session:
    s = _session(ledger)
    b = _baseline(ledger, s, reproducibility=m.Reproducibility.TOO_NOISY, threshold=0.02,
                  reproducibility_detail=DETAIL)  # fmt: skip
    r = _round(ledger, s, b, 1, [_variant(ledger, s, "fast|er[1]")])
    r.threshold = 0.045  # the round went on at the band the baseline's noise supports
    ledger.put(r)
    return s


def _first_screen(md: str) -> list[str]:
    return md.splitlines()[:MAX_LINES]


def test_the_first_screen_names_the_band_the_verdicts_rest_on(tmp_path: Path) -> None:
    _, md = _record(tmp_path, _widened)
    (band,) = [ln for ln in _first_screen(md) if ln.startswith("- **Band:**")]
    assert "verdicts at ±4.5%" in band and "widened from the contract's ±2%" in band, band


def test_a_round_at_the_contracts_band_says_so(tmp_path: Path) -> None:
    def build(ledger: Ledger) -> m.Session:
        s = _session(ledger)
        _round(ledger, s, _baseline(ledger, s), 1, [_variant(ledger, s, "v")])
        return s

    _, md = _record(tmp_path, build)
    assert "- **Band:** verdicts at ±2%, the contract's band" in _first_screen(md)


def test_the_two_baseline_medians_are_named(tmp_path: Path) -> None:
    _, md = _record(tmp_path, _widened)
    screen = _first_screen(md)
    (base,) = [ln for ln in screen if ln.startswith("- **Baseline:**")]
    assert "median of its own runs w 0.2" in base, base
    head = next(ln for ln in screen if ln.startswith("| variant |"))
    assert f"| {md_cell(MEDIANS_IN_ROUND)} |" in head, head


def test_a_baseline_outcome_is_said_once_on_the_first_screen(tmp_path: Path) -> None:
    assert said_once(NOISY, DETAIL).count(NOISY) == 1
    assert said_once(NOISY, DETAIL).startswith(f"{NOISY}; {W}: after 12 runs (second half")
    assert said_once("", "x") == "x" and said_once(NOISY, "") == NOISY
    _, md = _record(tmp_path, _widened)
    (base,) = [ln for ln in _first_screen(md) if ln.startswith("- **Baseline:**")]
    assert base.count("too noisy") == 1, base


def test_the_record_on_a_terminal_has_no_html_entities() -> None:
    md = "\n".join([
        "| a | b |", "| --- | --- |", f"| {md_cell('x|y [1] <z> & a*b*')} | c |", "",
        "```", "literal &lt; stays in code", "```",
    ])  # fmt: skip
    shown = for_terminal(md)
    assert "| x\\|y [1] <z> & a*b* | c |" in shown  # the pipe keeps its column
    assert "literal &lt; stays in code" in shown


@pytest.mark.slow
def test_gpuopt_export_on_a_terminal_reads_as_text(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "l.db") as ledger:
        s = _widened(ledger)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    argv = [sys.executable, "-m", "tui", "--ledger", str(tmp_path / "l.db"), "export", s.id]
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    os.close(slave)
    out = bytearray()
    try:
        while chunk := os.read(master, 65536):
            out.extend(chunk)
    except OSError:  # EIO: the process closed its end
        pass
    finally:
        os.close(master)
    assert proc.wait(timeout=60) == 0
    text = out.decode()
    assert "# Decision record" in text
    assert "&#" not in text and "&lt;" not in text and "&amp;" not in text, text[:2000]
    assert "fast\\|er[1]" in text
    piped = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert "fast&#124;er&#91;1&#93;" in piped.stdout  # into a pipe: markdown, as GitHub reads it


def test_a_metric_named_with_its_unit_is_not_said_twice() -> None:
    from session.timing import metric_text

    w = m.Workload(name="w", command="true")
    named = m.Contract(metric=m.Metric(name="time (ms)", unit="ms"), workloads=[w])
    assert metric_text(named, w) == "time (ms)"
    plain = m.Contract(metric=m.Metric(name="time", unit="ms"), workloads=[w])
    assert metric_text(plain, w) == "time (ms)"
