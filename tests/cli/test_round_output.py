"""What `gpuopt round` prints: legend, full numbers when piped, failed checks beside verdicts."""

from __future__ import annotations

from pathlib import Path

from conftest import run_git

from tui.cli import main


def gpuopt(capsys, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--ledger", str(ledger), *args])
    out, err = capsys.readouterr()
    return code, out, err


def patch(repo: Path, tmp_path: Path, text: str, name: str) -> Path:
    (repo / "value.txt").write_text(text)
    p = tmp_path / name
    p.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", ".")
    return p


def test_round_table_for_a_higher_is_better_metric(make_repo, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "throughput",
        "--workload", "a-workload-with-a-long-name=cat value.txt",
        "--metric", "regex:(?P<value>[0-9.]+)", "--unit", "items/s", "--direction", "higher",
        "--check", "! grep -q 9.99 value.txt",
    )  # fmt: skip
    assert code == 0, err
    sid = out.strip()
    assert gpuopt(capsys, ledger, "baseline", sid, "--runs", "8")[0] == 0
    more = patch(repo, tmp_path, "1.25\n", "more.diff")
    wrong = patch(repo, tmp_path, "9.99\n", "wrong.diff")
    for name, p in (("throughput-up-by-a-quarter", more), ("wrong-answers", wrong)):
        code, _, err = gpuopt(
            capsys, ledger, "variant", "add", sid, "--name", name, "--patch", str(p)
        )
        assert code == 0, err
    code, out, err = gpuopt(capsys, ledger, "round", sid, "--min-blocks", "6", "--max-blocks", "6")
    assert code == 0, err
    # higher is better: the ratio shown is baseline / variant, and the legend says so
    assert "baseline / variant" in out and "variant / baseline" not in out
    lines = out.splitlines()
    up = next(line for line in lines if "throughput-up-by-a-quarter" in line)
    # piped output keeps every number whole (no "…" cut by an 80-column guess)
    assert "0.800" in up and "0.800–0.800" in up and "FASTER" in up, out
    assert "…" not in out
    bad = next(line for line in lines if "wrong-answers" in line)
    # the verdict a reviewer sees (session.verdicts): BROKEN, never its speed verdict
    assert "BROKEN (check exited 1)" in bad and "FASTER" not in bad, out


def test_baseline_progress_reaches_a_log(make_repo, tmp_path, capsys):
    # stderr is not a terminal here (as under nohup, tmux logging or a batch scheduler):
    # a long baseline still says how far it got, in a few lines rather than one per run.
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", "read=cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)",
    )  # fmt: skip
    sid = out.strip()
    code, out, err = gpuopt(capsys, ledger, "baseline", sid, "--runs", "40", "--no-telemetry")
    assert code == 0, err
    lines = [line for line in err.splitlines() if "run " in line and " of 40" in line]
    assert 3 <= len(lines) <= 12, err
    assert "run 40 of 40" in lines[-1]
    assert "not_reproducible" not in err and ": reproducible" in err


def test_a_ref_variant_without_the_baselines_uncommitted_changes_is_flagged(
    make_repo, tmp_path, capsys
):
    repo = make_repo(files={"value.txt": "1.00\n", "bench.py": "print(1)\n"})
    ledger = tmp_path / "l.db"
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", "read=cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)",
    )  # fmt: skip
    sid = out.strip()
    (repo / "bench.py").write_text("print(2)  # an edit not committed yet\n")
    assert gpuopt(capsys, ledger, "baseline", sid, "--runs", "8", "--no-telemetry")[0] == 0
    run_git(repo, "checkout", "-q", "-b", "other")
    run_git(repo, "stash", "-q")
    (repo / "value.txt").write_text("0.90\n")
    run_git(repo, "commit", "-qam", "faster")
    run_git(repo, "checkout", "-q", "main")
    run_git(repo, "stash", "pop", "-q")
    code, out, err = gpuopt(capsys, ledger, "variant", "add", sid, "--name", "v", "--ref", "other")
    assert code == 0, err
    assert "bench.py" in err and "uncommitted" in err, err
    # a patch starts from the baseline snapshot: nothing to flag
    (repo / "value.txt").write_text("0.90\n")
    p = tmp_path / "p.diff"
    p.write_text(run_git(repo, "diff", "--", "value.txt"))
    run_git(repo, "checkout", "-q", "--", "value.txt")
    code, out, err = gpuopt(capsys, ledger, "variant", "add", sid, "--name", "p", "--patch", str(p))
    assert code == 0 and "uncommitted" not in err, err


def test_baseline_table_counts_the_values_it_really_has(make_repo, tmp_path, capsys):
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    cnt = tmp_path / "count"
    flaky = (
        f"c=$(cat {cnt} 2>/dev/null || echo 0); echo $((c+1)) > {cnt}; "
        "[ $((c % 3)) -ne 1 ] && cat value.txt"
    )
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", f"read={flaky}", "--metric", "regex:(?P<value>[0-9.]+)",
    )  # fmt: skip
    sid = out.strip()
    code, out, err = gpuopt(capsys, ledger, "baseline", sid, "--runs", "9", "--no-telemetry")
    assert code == 1, err  # runs without a value: not reproducible
    row = next(line for line in out.splitlines() if line.startswith("read "))
    assert "6 of 9" in row, out


def test_round_options_are_checked_before_anything_starts(make_repo, tmp_path, capsys):
    ledger = tmp_path / "l.db"
    repo = make_repo(files={"value.txt": "1.00\n"})
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", "read=cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)",
    )  # fmt: skip
    sid = out.strip()
    assert gpuopt(capsys, ledger, "baseline", sid, "--runs", "8", "--no-telemetry")[0] == 0
    assert gpuopt(capsys, ledger, "variant", "add", sid, "--name", "v", "--ref", "HEAD")[0] == 0
    for args, words in (
        (["--max-blocks", "5"], ["--max-blocks 5", "--min-blocks 10"]),
        (["--min-blocks", "1"], ["--min-blocks"]),
        (["--threshold", "2"], ["--threshold", "0.02"]),
        (["--budget", "0"], ["--budget"]),
    ):
        code, out, err = gpuopt(capsys, ledger, "round", sid, *args)
        assert code == 2, (args, err)
        assert err.count("\n") == 1 and all(w in err for w in words), (args, err)


def test_a_round_cut_short_says_its_verdicts_are_early(make_repo, tmp_path, capsys):
    ledger = tmp_path / "l.db"
    repo = make_repo(files={"value.txt": "1.00\n"})
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", "read=cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)",
    )  # fmt: skip
    sid = out.strip()
    assert gpuopt(capsys, ledger, "baseline", sid, "--runs", "8", "--no-telemetry")[0] == 0
    assert gpuopt(capsys, ledger, "variant", "add", sid, "--name", "v", "--ref", "HEAD")[0] == 0
    code, out, err = gpuopt(capsys, ledger, "round", sid, "--budget", "0.001", "--no-telemetry")
    assert code == 0, err
    assert "1 of at least 10 blocks" in out and "early" in out, out
