"""`gpuopt round`'s progress lines never show a speed verdict for a variant whose check
failed before block 1 (tester: `bad/w 0.5080 FASTER` after `round: check in bad: ...`)."""

from __future__ import annotations

from pathlib import Path

from conftest import run_git

from tui.cli import main


def gpuopt(capsys, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--ledger", str(ledger), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_progress_says_check_failed_not_faster(make_repo, tmp_path, capsys):
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    code, out, err = gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", "w=cat value.txt", "--metric", "regex:(?P<value>[0-9.]+)", "--unit", "s",
        "--check", "! grep -q 0.50 value.txt",
    )  # fmt: skip
    assert code == 0, err
    sid = out.strip()
    code, _, err = gpuopt(capsys, ledger, "baseline", sid, "--runs", "4", "--max-runs", "4",
                          "--warmup", "0", "--no-telemetry")  # fmt: skip
    assert code == 0, err
    (repo / "value.txt").write_text("0.50\n")
    p = tmp_path / "bad.diff"
    p.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", ".")
    assert gpuopt(capsys, ledger, "variant", "add", sid, "--name", "bad", "--patch", str(p))[0] == 0
    code, out, err = gpuopt(capsys, ledger, "round", sid, "--min-blocks", "3", "--max-blocks", "3",
                            "--no-telemetry")  # fmt: skip
    blocks = [line for line in err.splitlines() if "round: block" in line]
    assert blocks, err
    for line in blocks:
        assert "bad/w" in line and "check failed" in line and "FASTER" not in line, err
