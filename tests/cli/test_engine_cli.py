"""The engine's commands: baseline, variant add/list, round (in-process, real git and runs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_git

from tui.cli import main

METRIC = ["--metric", "regex:(?P<value>[0-9.]+)"]


def gpuopt(capsys, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(["--ledger", str(ledger), *args])
    except SystemExit as exc:  # argparse's own refusal (a number out of its range)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def setup(make_repo, tmp_path, capsys):
    repo = make_repo(files={"value.txt": "1.00\n", **{f"f{i}.txt": f"{i}\n" for i in range(7)}})
    ledger = tmp_path / "l.db"
    code, out, _ = gpuopt(
        capsys,
        ledger,
        "new",
        "--repo",
        str(repo),
        "--title",
        "t",
        "--workload",
        "read=cat value.txt",
        *METRIC,
        "--check",
        "test -s value.txt",
    )
    assert code == 0
    return repo, ledger, out.strip()


def make_patch(repo: Path, tmp_path: Path, changes: dict[str, str], name: str) -> Path:
    for rel, text in changes.items():
        (repo / rel).write_text(text)
    patch = tmp_path / name
    patch.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", ".")
    return patch


@pytest.mark.slow
def test_baseline_variant_round(setup, capsys, tmp_path):
    repo, ledger, sid = setup
    code, out, err = gpuopt(capsys, ledger, "round", sid)
    assert code == 2 and "no baseline yet" in err and err.count("\n") == 1

    code, out, err = gpuopt(capsys, ledger, "baseline", sid, "--runs", "8")
    assert code == 0, err
    assert "Baseline ID" in out and "reproducible" in out and "reset / restore procedure" in out
    assert "worktree add --detach" in out
    code, out, _ = gpuopt(capsys, ledger, "baseline", sid, "--runs", "8", "--json")
    data = json.loads(out)
    assert (
        code == 0
        and data["reference"] == {"read": 1.0}
        and data["reproducibility"] == "reproducible"
    )

    slow = make_patch(repo, tmp_path, {"value.txt": "1.25\n"}, "slow.diff")
    code, out, err = gpuopt(
        capsys, ledger, "variant", "add", sid, "--name", "slow", "--patch", str(slow)
    )
    assert code == 0, err
    assert "value.txt | 2 +-" in out and "1 file(s)" in out and "warning" not in err
    wide = make_patch(repo, tmp_path, {f"f{i}.txt": "changed\n" for i in range(7)}, "wide.diff")
    code, out, err = gpuopt(
        capsys, ledger, "variant", "add", sid, "--name", "wide", "--patch", str(wide)
    )
    assert code == 0 and "7 files changed" in err and "one factor" in err
    code, out, err = gpuopt(
        capsys, ledger, "variant", "add", sid, "--name", "same", "--ref", "HEAD", "--probe"
    )
    assert code == 0 and "identical to the baseline" in err  # a clean tree: an A/A probe
    code, out, err = gpuopt(
        capsys, ledger, "variant", "add", sid, "--name", "slow", "--ref", "HEAD"
    )
    assert code == 2 and "already has a variant" in err
    code, out, err = gpuopt(
        capsys, ledger, "variant", "add", sid, "--name", "x", "--patch", "/nope"
    )
    assert code == 2 and "no such patch" in err
    code, out, err = gpuopt(capsys, ledger, "variant", "add", sid, "--name", "x", "--ref", "nope")
    assert code == 2 and "names no commit" in err and err.count("\n") == 1
    code, out, _ = gpuopt(capsys, ledger, "variant", "list", sid, "--json")
    rows = json.loads(out)
    assert [(r["name"], r["kind"], r["files_changed"]) for r in rows] == [
        ("slow", "change", 1),
        ("wide", "change", 7),
        ("same", "probe", 0),
    ]
    code, out, _ = gpuopt(capsys, ledger, "variant", "list", sid)
    assert code == 0 and "slow" in out and "probe" in out

    code, out, err = gpuopt(
        capsys,
        ledger,
        "round",
        sid,
        "--variants",
        "slow,same",
        "--min-blocks",
        "6",
        "--max-blocks",
        "8",
        "--seed",
        "5",
    )
    assert code == 0, err
    assert "SLOWER" in out and "SAME" in out and "1.250 " in out and "seed 5" in out
    assert "baseline check: 1.0000× its reference, reproduced" in out
    assert "check slow: passed" in out
    assert "round: block 6/8" in err  # progress goes to stderr
    code, out, err = gpuopt(
        capsys,
        ledger,
        "round",
        sid,
        "--variants",
        "wide",
        "--min-blocks",
        "6",
        "--max-blocks",
        "6",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["round"]["number"] == 2 and data["round"]["status"] == "completed"
    assert [c["variant"] for c in data["comparisons"]] == ["wide"]
    assert data["comparisons"][0]["verdict"] == "SAME"
    code, out, err = gpuopt(capsys, ledger, "round", sid, "--variants", "nope")
    assert code == 2 and "no variant 'nope'" in err
    code, out, err = gpuopt(capsys, ledger, "round", sid, "--min-blocks", "9", "--max-blocks", "3")
    assert code == 2 and "min-blocks" in err
    assert run_git(repo, "worktree", "list").count("\n") == 1


def test_errors_are_one_line_with_exit_codes(make_repo, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    ledger = tmp_path / "l.db"
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(plain), "--title", "t", "--workload", "w=true"
    )
    assert code == 2 and len(err.splitlines()) == 1 and "git work tree" in err
    # A repository that stops being one after `new` (its .git removed): found at baseline.
    gone = make_repo("gone")
    code, sid, _ = gpuopt(
        capsys, ledger, "new", "--repo", str(gone), "--title", "t", "--workload", "w=true"
    )
    sid = sid.strip()
    shutil.rmtree(gone / ".git")
    code, out, err = gpuopt(capsys, ledger, "baseline", sid, "--runs", "2")
    last = err.splitlines()[-1]
    assert (
        code == 1 and last.startswith("gpuopt: ") and last.endswith("not inside a git repository")
    )
    assert "Traceback" not in err
    code, out, err = gpuopt(capsys, ledger, "baseline", sid, "--runs", "1")
    assert code == 2 and "--runs" in err
    code, out, err = gpuopt(capsys, ledger, "baseline", "zzzz")
    assert code == 2 and "no session" in err
    code, out, err = gpuopt(capsys, ledger, "variant", "add", sid, "--name", "v", "--ref", "HEAD")
    assert code == 1 and "not inside a git repository" in err

    repo = make_repo()
    counter = tmp_path / "n"
    code, sid2, _ = gpuopt(
        capsys,
        ledger,
        "new",
        "--repo",
        str(repo),
        "--title",
        "t",
        *METRIC,
        "--workload",
        f"drift=n=$(cat {counter} 2>/dev/null || echo 1); echo $((n*2)) > {counter}; echo $n",
    )
    sid2 = sid2.strip()
    code, out, err = gpuopt(
        capsys, ledger, "variant", "add", sid2, "--name", "p", "--patch", str(counter)
    )
    assert code == 2 and "record a baseline first" in err
    code, out, err = gpuopt(capsys, ledger, "baseline", sid2, "--runs", "8")
    # drifting with no cause the telemetry names: a warning, not a refusal (issue 21; the
    # round after it: tests/cli/test_drift_rounds.py)
    assert code == 0 and "drifting at ±2% (a warning" in out and "a round goes on" in out
    code, out, err = gpuopt(capsys, ledger, "variant", "add", sid2, "--name", "v", "--ref", "HEAD")
    assert code == 0
