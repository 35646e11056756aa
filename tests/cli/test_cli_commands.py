"""The command line of the foundation: help, new, sessions, export, ledger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger import Ledger
from session import models as m
from tui.cli import COMMAND_MODULES, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """Run `gpuopt ARGV` in this process: (exit code, stdout, stderr)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(result: tuple[int, str, str], code: int = 2) -> str:
    got, out, err = result
    assert got == code, result
    assert out == "", out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "ledger.db")


@pytest.fixture
def repo(tmp_path: Path) -> str:
    (tmp_path / "repo").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)  # `new` needs one
    return str(tmp_path / "repo")


def _commands() -> dict[str, Any]:
    parser = build_parser()
    action = parser._subparsers._group_actions[0]  # type: ignore[union-attr]
    return dict(action.choices)


# ---------------------------------------------------------------------------- help


def test_help_lists_every_command(capsys: Any) -> None:
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    commands = _commands()
    assert {"sessions", "new", "export", "ledger"} <= set(commands)
    for name in commands:
        assert f"\n    {name} " in out or f"\n    {name}\n" in out, name
    present = [n for n in COMMAND_MODULES if (ROOT / "tui" / "commands" / f"{n}.py").exists()]
    assert len(commands) >= len(present)


def test_every_command_has_help(capsys: Any) -> None:
    for name, parser in _commands().items():
        code, out, _ = cli(capsys, name, "--help")
        assert code == 0 and out.startswith("usage: gpuopt " + name), name
        nested = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        for action in nested:
            for child in action.choices:
                code, out, _ = cli(capsys, name, child, "--help")
                assert code == 0 and f"gpuopt {name} {child}" in out


# ---------------------------------------------------------------------------- new


def test_new_prints_only_the_id_and_records_the_contract(capsys: Any, db: str, repo: str) -> None:
    code, out, err = cli(
        capsys, "--ledger", db, "new", "--repo", repo, "--title", "softmax fusion ü",
        "--workload", "e2e=python bench.py --n 3", "--workload", "kern=torch:pkg.mod:fn",
        "--metric", r"regex:time=(?P<value>[0-9.]+)", "--unit", "ms", "--direction", "lower",
        "--check", "pytest -q", "--setup", "make", "--prepare", "rm -rf cache",
        "--cleanup", "make clean", "--timeout", "120", "--launcher", "srun -N1",
        "--isolated", "e2e", "--training", "kern",
    )  # fmt: skip
    assert code == 0, err
    sid = out.strip()
    assert out == sid + "\n" and len(sid) == 12 and sid.isalnum()
    with Ledger.open(db) as ledger:
        s = ledger.get(m.Session, sid)
    assert s is not None and s.title == "softmax fusion ü" and s.repo == str(Path(repo).resolve())
    c = s.contract
    assert [(w.name, w.kind, w.scope, w.training) for w in c.workloads] == [
        ("e2e", m.WorkloadKind.COMMAND, m.WorkloadScope.ISOLATED, False),
        ("kern", m.WorkloadKind.TORCH, m.WorkloadScope.ISOLATED, True),
    ]
    assert c.workloads[0].command == "python bench.py --n 3"
    assert (c.metric.source, c.metric.pattern, c.metric.unit) == (
        m.MetricSource.REGEX, "time=(?P<value>[0-9.]+)", "ms")  # fmt: skip
    assert (c.check, c.hooks.setup, c.hooks.prepare, c.hooks.cleanup) == (
        "pytest -q", "make", "rm -rf cache", "make clean")  # fmt: skip
    assert (c.timeout_s, c.launcher) == (120.0, "srun -N1")


BAD_NEW = {
    "no workload": [],
    "workload without =": ["--workload", "justacommand"],
    "empty workload name": ["--workload", "=true"],
    "empty command": ["--workload", "w="],
    "duplicate workload": ["--workload", "w=a", "--workload", "w=b"],
    "bad metric": ["--workload", "w=true", "--metric", "cycles"],
    "regex without group": ["--workload", "w=true", "--metric", "regex:[0-9]+"],
    "broken regex": ["--workload", "w=true", "--metric", "regex:(x"],
    "bad direction": ["--workload", "w=true", "--direction", "sideways"],
    "negative timeout": ["--workload", "w=true", "--timeout", "-5"],
    "timeout not a number": ["--workload", "w=true", "--timeout", "soon"],
    "unknown isolated": ["--workload", "w=true", "--isolated", "nope"],
    "blank title": ["--workload", "w=true", "--title", "  "],
    "unknown option": ["--workload", "w=true", "--colour"],
}


@pytest.mark.parametrize("case", list(BAD_NEW))
def test_new_bad_input_is_one_line_and_exit_2(capsys: Any, db: str, repo: str, case: str) -> None:
    args = ["--ledger", db, "new", "--repo", repo, "--title", "t", *BAD_NEW[case]]
    one_line_error(cli(capsys, *args))
    assert not Path(db).exists() or Ledger.open(db).list(m.Session) == []


def test_new_with_a_missing_repo(capsys: Any, db: str, tmp_path: Path) -> None:
    line = one_line_error(
        cli(
            capsys,
            "--ledger",
            db,
            "new",
            "--repo",
            str(tmp_path / "nowhere"),
            "--title",
            "t",
            "--workload",
            "w=true",
        )
    )
    assert "--repo" in line


def test_bytes_that_are_not_utf8_are_bad_input(db: str, repo: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", db, "new", "--repo", repo,
         "--title", b"caf\xe9", "--workload", "w=true"],
        capture_output=True, env=ENV, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().strip() == "gpuopt: --title: not valid UTF-8 text"


# ---------------------------------------------------------------------------- sessions


def _new(capsys: Any, db: str, repo: str, title: str) -> str:
    code, out, err = cli(capsys, "--ledger", db, "new", "--repo", repo, "--title", title,
                         "--workload", "w=true")  # fmt: skip
    assert code == 0, err
    return out.strip()


def test_sessions_json_and_table(capsys: Any, db: str, repo: str) -> None:
    code, out, _ = cli(capsys, "--ledger", db, "sessions", "--json")
    assert (code, json.loads(out)) == (0, [])
    first = _new(capsys, db, repo, "first")
    hostile = "second | with <html> & \x1b[31mescapes"
    code, _, err = cli(capsys, "--ledger", db, "new", "--repo", repo, "--title", hostile,
                       "--workload", "w=true")  # fmt: skip
    assert code == 2 and "control characters" in err  # a new title has none...
    from ledger import Ledger
    from session import models as m

    with Ledger.open(db) as ledger:  # ...but a stored one may (an older gpuopt, a foreign file)
        row = m.Session(title=hostile, repo=repo, contract=m.Contract(
            workloads=[m.Workload(name="w", command="true")]))  # fmt: skip
        ledger.put(row)
    second = row.id
    code, out, _ = cli(capsys, "sessions", "--json", "--ledger", db)  # --ledger after it too
    rows = json.loads(out)
    assert code == 0 and [r["id"] for r in rows] == [second, first]  # newest first
    assert rows[0]["title"] == "second | with <html> & \x1b[31mescapes"
    assert {"id", "title", "repo", "created_at", "baselines", "hypotheses", "variants",
            "rounds"} <= set(rows[0])  # fmt: skip
    code, out, _ = cli(capsys, "--ledger", db, "sessions")
    assert code == 0 and first in out and second in out


def test_default_ledger_from_the_environment(
    capsys: Any, tmp_path: Path, repo: str, monkeypatch: Any
) -> None:
    path = tmp_path / "env" / "from-env.db"
    monkeypatch.setenv("GPUOPT_LEDGER", str(path))
    code, out, err = cli(capsys, "new", "--repo", repo, "--title", "t", "--workload", "w=true")
    assert code == 0, err
    sid = out.strip()
    assert path.exists()
    code, out, _ = cli(capsys, "ledger", "path")
    assert out.strip() == str(path)
    code, out, _ = cli(capsys, "sessions", "--json")
    assert [r["id"] for r in json.loads(out)] == [sid]


# ---------------------------------------------------------------------------- export


def _rich_session(db: str) -> m.Session:
    contract = m.Contract(
        metric=m.Metric(), workloads=[m.Workload(name="e2e", command="python run.py")]
    )
    s = m.Session(id="feedc0de0001", title="fusion", repo="/r", contract=contract)
    snap = m.Snapshot(commit=COMMIT, ref="refs/gpuopt/snapshots/a", dirty=True)
    b = m.Baseline(id="base1", session_id=s.id, snapshot=snap, contract_hash="c",
                   environment=m.EnvironmentFingerprint(python="3.11"),
                   reproducibility=m.Reproducibility.REPRODUCIBLE,
                   reference={"e2e": 1.5})  # fmt: skip
    h = m.Hypothesis(id="hyp1", session_id=s.id, title="launch overhead", mechanism="launches")
    v = m.Variant(id="var1", session_id=s.id, name="fused", hypothesis_id=h.id, snapshot=snap,
                  kind=m.VariantKind.PROBE)  # fmt: skip
    r = m.Round(id="round1", session_id=s.id, baseline_id=b.id, variant_ids=[v.id], blocks=12,
                status=m.RoundStatus.COMPLETED, baseline_check=1.003)  # fmt: skip
    c = m.Comparison(round_id=r.id, variant_id=v.id, workload="e2e", n=12, ratio=0.74,
                     ci_low=0.73, ci_high=0.75, verdict=m.Verdict.FASTER)  # fmt: skip
    ok = m.CorrectnessResult(session_id=s.id, variant_id=v.id, workload="e2e", passed=True,
                             stats=[m.ErrorStats(max_abs=0.0, bit_identical=True)])  # fmt: skip
    d = m.Disposition(session_id=s.id, variant_id=v.id, choice=m.DispositionChoice.KEEP_GUARDED,
                      optimization_class=m.OptimizationClass.C2, guards=["n < 4096"],
                      fallback="old path", reopen_when="new GPU")  # fmt: skip
    with Ledger.open(db) as ledger:
        ledger.put(s, b, h, v, r, c, ok, d)
    return s


def test_export_json_carries_the_documented_keys(capsys: Any, db: str, tmp_path: Path) -> None:
    _rich_session(db)
    out_file = tmp_path / "record.json"
    code, out, err = cli(capsys, "--ledger", db, "export", "feedc0", "--format", "json",
                         "-o", str(out_file))  # fmt: skip
    assert code == 0 and out == "", err
    data = json.loads(out_file.read_text())
    assert data["format"] == "gpuopt-session" and isinstance(data["version"], int)
    assert {"id", "title", "repo", "metric", "direction", "unit"} <= set(data["session"])
    for key in ("workloads", "baselines", "hypotheses", "variants", "rounds", "correctness",
                "dispositions"):  # fmt: skip
        assert isinstance(data[key], list) and len(data[key]) == 1, key
    b = data["baselines"][0]
    assert {"baseline_id", "snapshot", "environment", "reproducible"} <= set(b)
    assert b["snapshot"] == {**b["snapshot"], "commit": COMMIT, "dirty": True}
    assert "ref" in b["snapshot"] and b["reproducible"] is True
    v = data["variants"][0]
    assert {"id", "name", "hypothesis_id", "snapshot", "probe"} <= set(v) and v["probe"] is True
    r = data["rounds"][0]
    assert {"id", "baseline_id", "status", "blocks", "baseline_check", "comparisons"} <= set(r)
    c = r["comparisons"][0]
    assert {k: c[k] for k in ("variant", "workload", "ratio", "ci_low", "ci_high", "verdict",
                              "n")} == {"variant": "fused", "workload": "e2e", "ratio": 0.74,
            "ci_low": 0.73, "ci_high": 0.75, "verdict": "FASTER", "n": 12}  # fmt: skip
    k = data["correctness"][0]
    assert {"variant", "workload", "passed", "stats"} <= set(k) and k["passed"] is True
    d = data["dispositions"][0]
    assert {k: d[k] for k in ("variant", "choice", "class", "guards", "fallback",
                              "reopen_when")} == {"variant": "fused", "choice": "keep-guarded",
            "class": "C2", "guards": ["n < 4096"], "fallback": "old path",
            "reopen_when": "new GPU"}  # fmt: skip


def test_export_markdown_to_stdout_and_file(capsys: Any, db: str, tmp_path: Path) -> None:
    _rich_session(db)
    code, out, _ = cli(capsys, "--ledger", db, "export", "feedc0de0001")
    assert code == 0 and out.startswith("# ") and "fusion" in out and "FASTER" in out
    target = tmp_path / "record.md"
    code, out2, _ = cli(capsys, "--ledger", db, "export", "feed", "--format", "md",
                        "-o", str(target))  # fmt: skip
    assert code == 0 and out2 == "" and target.read_text() == out
    assert not list(tmp_path.glob("*.tmp"))
    line = one_line_error(cli(capsys, "--ledger", db, "export", "feed", "-o",
                              str(tmp_path / "no" / "such" / "dir.md")))  # fmt: skip
    assert "cannot write" in line


def test_session_prefixes(capsys: Any, db: str, repo: str) -> None:
    _rich_session(db)
    contract = m.Contract(workloads=[m.Workload(name="w", command="true")])
    with Ledger.open(db) as ledger:
        ledger.put(m.Session(id="feedbeef0002", title="other", repo="/r", contract=contract))
    assert cli(capsys, "--ledger", db, "export", "feedb", "--format", "json")[0] == 0
    line = one_line_error(cli(capsys, "--ledger", db, "export", "feed"))
    assert "feedc0de0001" in line and "feedbeef0002" in line
    assert "no session" in one_line_error(cli(capsys, "--ledger", db, "export", "abc"))
    assert one_line_error(cli(capsys, "--ledger", db, "export", " "))


# ---------------------------------------------------------------------------- ledger


def test_ledger_check_and_backup(capsys: Any, db: str, repo: str, tmp_path: Path) -> None:
    sid = _new(capsys, db, repo, "t")
    code, out, _ = cli(capsys, "--ledger", db, "ledger", "check")
    assert code == 0 and ": ok" in out and "sessions 1" in out
    code, out, _ = cli(capsys, "--ledger", db, "ledger", "check", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["counts"]["sessions"] == 1
    copy = tmp_path / "copy.db"
    assert cli(capsys, "--ledger", db, "ledger", "backup", str(copy))[0] == 0
    with Ledger.open(copy, readonly=True) as backup:
        assert [s.id for s in backup.list(m.Session)] == [sid]
    assert "exists" in one_line_error(cli(capsys, "--ledger", db, "ledger", "backup", str(copy)))


def test_bare_gpuopt_off_a_terminal_says_so_and_touches_no_ledger(db: str) -> None:
    # `gpuopt` alone opens the app; from a script or a pipe there is no terminal for it:
    # one line that points at the subcommands, exit 2, and no ledger created on the way.
    result = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--ledger", db], stdin=subprocess.DEVNULL,
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "gpuopt: the full-screen app needs a terminal; use the subcommands (gpuopt --help) "
        "in scripts"
    ]
    assert not Path(db).exists()


def test_new_refuses_a_ledger_inside_the_repository(capsys: Any, repo: str) -> None:
    inside = Path(repo) / "sub" / "l.db"
    line = one_line_error(
        cli(
            capsys,
            "--ledger",
            str(inside),
            "new",
            "--repo",
            repo,
            "--title",
            "t",
            "--workload",
            "w=true",
        )
    )
    assert "inside the repository" in line
    assert not (Path(repo) / "sub").exists()
