"""One --threshold for `new`, `baseline` and `round`; a noisy baseline does not dead-end."""

from __future__ import annotations

from pathlib import Path

from ledger import Ledger
from session import models as m
from tui.cli import main


def gpuopt(capsys, ledger: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--ledger", str(ledger), *args])
    out, err = capsys.readouterr()
    return code, out, err


def _new(capsys, ledger: Path, repo: Path, workload: str, *extra: str) -> tuple[int, str, str]:
    return gpuopt(
        capsys, ledger, "new", "--repo", str(repo), "--title", "t",
        "--workload", f"read={workload}", "--metric", "regex:(?P<value>[0-9.]+)", *extra,
    )  # fmt: skip


def test_new_keeps_the_threshold_in_the_contract_as_a_fraction_or_percentage(
    make_repo, tmp_path, capsys
):
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    for given, kept in (("0.05", 0.05), ("5%", 0.05), ("2.5%", 0.025)):
        code, out, err = _new(capsys, ledger, repo, "cat value.txt", "--threshold", given)
        assert code == 0, err
        with Ledger.open(ledger) as led:
            session = led.get(m.Session, out.strip())
            assert session is not None and session.contract.threshold == kept
    for bad in ("2", "0", "abc", "150%"):
        code, out, err = _new(capsys, ledger, repo, "cat value.txt", "--threshold", bad)
        assert code == 2 and err.count("\n") == 1 and f"--threshold {bad}" in err, err


def test_the_same_threshold_words_in_new_baseline_and_round(make_repo, tmp_path, capsys):
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    sid = _new(capsys, ledger, repo, "cat value.txt")[1].strip()
    for cmd in (["baseline", sid], ["round", sid]):
        code, _, err = gpuopt(capsys, ledger, *cmd, "--threshold", "1.5")
        assert code == 2 and "--threshold 1.5: the band must lie between ±0.1% and 100%" in err, err


def test_a_too_noisy_baseline_says_its_noise_and_a_round_goes_on_at_a_wider_band(
    make_repo, tmp_path, capsys
):
    # values 1.00, 1.10, 1.00, 1.10 ...: 5% noise around the mean, no drift between halves
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "l.db"
    cnt = tmp_path / "n"
    flip = (
        f"c=$(cat {cnt} 2>/dev/null || echo 0); echo $((c+1)) > {cnt}; "
        "if [ $((c % 2)) -eq 0 ]; then echo 1.00; else echo 1.10; fi"
    )
    sid = _new(capsys, ledger, repo, flip)[1].strip()
    code, out, err = gpuopt(
        capsys, ledger, "baseline", sid, "--runs", "10", "--max-runs", "14", "--no-telemetry"
    )
    assert code == 0, out + err  # too noisy is not a dead end
    # the band advised is one a round resolves at this noise (issue 21), said with the noise
    assert (
        "too noisy for ±2%" in out and "CV " in out and "a round of 30 blocks resolves ±" in out
    ), out
    assert "--threshold" in out
    code, out, err = gpuopt(capsys, ledger, "variant", "add", sid, "--name", "v", "--ref", "HEAD")
    assert code == 0, err
    code, out, err = gpuopt(
        capsys, ledger, "round", sid, "--min-blocks", "4", "--max-blocks", "4",
        "--threshold", "30%", "--no-telemetry",
    )  # fmt: skip
    assert code == 0, err
    assert "threshold 30.0%" in out, out
