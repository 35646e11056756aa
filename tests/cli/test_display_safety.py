"""Stored text reaches the terminal as text: no markup read, no control sequence sent.

Every listing of the command line is fed titles, names and notes full of Rich markup and
terminal control sequences (hypothesis generates them), and must print them literally,
without a crash and without one raw ESC or C1 byte.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import run_git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger import Ledger
from session import conduct
from session import models as m
from tui.cli import main
from tui.display import LIMIT, plain, shown

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from hostile_text import hostile, raw_controls

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FEW = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@contextmanager
def wide() -> Iterator[None]:
    """A console wide enough that no cell is folded, with no colour forced on."""
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    os.environ["COLUMNS"] = "100000"
    os.environ.pop("FORCE_COLOR", None)
    os.environ.pop("TTY_COMPATIBLE", None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def gpuopt(capsys: Any, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    with wide():
        try:
            code = main(["--ledger", str(ledger), *args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def assert_safe(out: str, *values: str) -> None:
    assert not raw_controls(out), (raw_controls(out), out)
    assert "Traceback" not in out and "MarkupError" not in out, out
    for value in values:
        assert plain(value) in out, (plain(value), out)


def contract(workloads: tuple[str, ...] = ("bench",)) -> m.Contract:
    return m.Contract(workloads=[m.Workload(name=w, command="true") for w in workloads])


def snapshot() -> m.Snapshot:
    return m.Snapshot(commit=COMMIT, ref="refs/gpuopt/snapshots/x", head=COMMIT)


# ---------------------------------------------------------------------------- the function


@given(st.text())
def test_plain_leaves_no_control_character(value: str) -> None:
    assert not raw_controls(plain(value, limit=None), allowed="")
    assert not raw_controls(plain(value, limit=None, multiline=True), allowed="\n\t")
    assert plain(value, limit=None, multiline=True).count("\n") == value.count("\n")


@given(hostile())
def test_text_is_never_read_as_markup(value: str) -> None:
    from rich.console import Console

    console = Console(width=10_000, file=open(os.devnull, "w"), record=True)  # noqa: SIM115
    console.print(shown(value))
    console.print(shown(value, style="bold"), markup=True, emoji=True)
    out = console.export_text()
    assert out.splitlines() == [plain(value), plain(value)]


def test_escapes_are_readable_and_cut_values_say_so() -> None:
    assert plain("a\x1b]0;x\x07b\x9bc\u202e") == "a\\x1b]0;x\\x07b\\x9bc\\u202e"
    assert plain("one\ntwo\tthree") == "one\\ntwo\\tthree"
    assert plain("one\ntwo", multiline=True) == "one\ntwo"
    assert plain("x" * (LIMIT + 5)) == "x" * LIMIT + "… (5 more characters)"
    assert plain(None) == "" and plain(42) == "42"
    t = shown("a\x1bb")
    assert t.plain == "a\\x1bb" and any(s.style == "reverse" for s in t.spans)


# ---------------------------------------------------------------------------- the listings


# The fields of `gpuopt sessions` off a terminal (id, title, repo, created, four counts),
# each followed by a tab.
SESSION_FIELDS = 8


@FEW
@given(title=hostile(), repo=hostile(), sid=hostile(max_size=3))
def test_sessions_prints_any_title_literally(tmp_path: Path, capsys: Any, title, repo, sid):
    db = tmp_path / f"{time.monotonic_ns()}.db"
    with Ledger.open(db) as ledger:
        ledger.put(m.Session(id=sid, title=title, repo=repo, contract=contract()))
    code, out, err = gpuopt(capsys, db, "sessions")
    assert code == 0, err
    # Off a terminal the columns are tab-separated: a tab of the title must not add one.
    assert len(out.splitlines()) == 1
    assert out.count("\t") == SESSION_FIELDS
    assert_safe(out.replace("\t", " ") + err, title, repo, sid)


def test_sessions_with_the_issue_title(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "l.db"
    title = "cache reads from [/dev/shm] instead of disk"
    with Ledger.open(db) as ledger:
        ledger.put(m.Session(title=title, repo="/r", contract=contract()))
    code, out, err = gpuopt(capsys, db, "sessions")
    assert code == 0, err
    assert title in out


@FEW
@given(title=hostile(), mechanism=hostile(), why=hostile())
def test_hypothesis_list_prints_any_text_literally(tmp_path: Path, capsys: Any, title, mechanism,
                                                   why):  # fmt: skip
    db = tmp_path / f"{time.monotonic_ns()}.db"
    s = m.Session(title="t", repo="/r", contract=contract())
    h = m.Hypothesis(session_id=s.id, title=title, mechanism=mechanism)
    with Ledger.open(db) as ledger:
        ledger.put(s, h, m.HypothesisEvent(hypothesis_id=h.id, field="confidence",
                                           from_value=why, to_value=why, why=why))  # fmt: skip
    code, out, err = gpuopt(capsys, db, "hypothesis", "list", s.id, "--history")
    assert code == 0, err
    assert_safe(out + err, title, mechanism, why)


@FEW
@given(name=hostile(forbid=", \n\t"), source=hostile(), hid=hostile())
def test_variant_list_prints_any_name_literally(tmp_path: Path, capsys: Any, name, source, hid):
    if name == "baseline":
        return
    db = tmp_path / f"{time.monotonic_ns()}.db"
    s = m.Session(title="t", repo="/r", contract=contract())
    h = m.Hypothesis(id=hid, session_id=s.id, title="h")
    v = m.Variant(session_id=s.id, name=name, snapshot=snapshot(), source=source,
                  hypothesis_id=hid)  # fmt: skip
    with Ledger.open(db) as ledger:
        ledger.put(s, h, v)
    code, out, err = gpuopt(capsys, db, "variant", "list", s.id)
    assert code == 0, err
    assert_safe(out + err, name, source, hid)


@FEW
@given(text=hostile(), note=hostile())
def test_preflight_prints_any_answer_literally(tmp_path: Path, capsys: Any, text, note):
    db = tmp_path / f"{time.monotonic_ns()}.db"
    s = m.Session(title="t", repo="/r", contract=contract(), bottleneck_evidence=note)
    with Ledger.open(db) as ledger:
        ledger.put(s)
    code, _, err = gpuopt(capsys, db, "preflight", s.id, "--not-applicable", f"lifetime={text}",
                          "--note", f"3={note}")  # fmt: skip
    assert code == 0, err
    code, out, err = gpuopt(capsys, db, "preflight", s.id)
    assert code == 0, err
    assert_safe(out + err, text, note)


@FEW
@given(names=st.lists(hostile(forbid="=,\n\t"), min_size=1, max_size=3, unique=True),
       variant=hostile(forbid=", \n\t"), message=hostile())  # fmt: skip
def test_progress_lines_show_any_name(capsys: Any, names, variant, message) -> None:
    from tui.commands.run_opts import progress_display

    comparisons = [
        m.Comparison(round_id="r", variant_id="v1", workload=w, n=3, ratio=0.9,
                     ci_low=0.8, ci_high=1.0, verdict=m.Verdict.FASTER)
        for w in names
    ]  # fmt: skip
    capsys.readouterr()
    with wide(), progress_display("round", {"v1": variant}) as show:
        show(conduct.Progress(phase="baseline", message=message, runs_done=1, runs_total=1))
        show(conduct.Progress(phase="round", message="", block=1, max_blocks=2,
                              comparisons=comparisons))  # fmt: skip
    out, err = capsys.readouterr()
    assert_safe(out + err, message, variant, *names)


# ---------------------------------------------------------------------------- real runs


def test_bracketed_names_measure_to_the_end_and_print_apart(make_repo, tmp_path, capsys):
    repo = make_repo(files={"value.txt": "1.00\n"})
    db = tmp_path / "l.db"
    evil = "bench[/dev/shm]\x1b]0;pwned\x07"
    workloads = ["bench[fp16]", "bench[fp32]", evil]
    args = [a for w in workloads for a in ("--workload", f"{w}=cat value.txt")]
    code, out, err = gpuopt(capsys, db, "new", "--repo", str(repo), "--title", "t[/x]", *args,
                            "--metric", "regex:(?P<value>[0-9.]+)")  # fmt: skip
    assert code == 0, err
    sid = out.strip()
    code, out, err = gpuopt(capsys, db, "baseline", sid, "--runs", "8", "--warmup", "0",
                            "--no-telemetry")  # fmt: skip
    assert code in (0, 1), err  # measured to the end, reproducible or not
    assert_safe(out + err, *workloads)
    (repo / "value.txt").write_text("0.50\n")
    p = tmp_path / "half.diff"
    p.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", ".")
    for name in ("v[fp16]", "v[/dev/shm]\x1b[2J"):
        code, out, err = gpuopt(capsys, db, "variant", "add", sid, "--name", name,
                                "--patch", str(p))  # fmt: skip
        assert code == 0, err
        assert_safe(out + err, name)
    code, out, err = gpuopt(capsys, db, "round", sid, "--min-blocks", "2", "--max-blocks", "2",
                            "--no-telemetry")  # fmt: skip
    assert code == 0, err
    assert_safe(out + err, *workloads, "v[fp16]", "v[/dev/shm]\x1b[2J")
    with Ledger.open(db, readonly=True) as ledger:
        rnd = ledger.list(m.Round, session_id=sid)[-1]
    assert rnd.status is m.RoundStatus.COMPLETED and rnd.blocks == 2
