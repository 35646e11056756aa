"""Large profiler files are read as a stream: `gpuopt evidence add` on a profile of tens of
megabytes keeps its memory near that of a tiny one, and the summary and hash are those of
the whole file. (tests/benchmarks/evidence_rss.py measures a 200 MB file.)"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from session import evidence as ev

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
MB = 1 << 20


def big_ncu_csv(path: Path, size: int) -> int:
    """An Nsight Compute raw CSV of about size bytes: the sample's header, then its kernel
    rows repeated. Returns the number of kernel rows."""
    lines = (DATA / "ncu_raw_sample.csv").read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    head, rows = lines[: start + 2], [ln for ln in lines[start + 2 :] if ln.strip()]
    block = "".join(rows).encode()
    n = 0
    with path.open("wb") as f:
        f.write("".join(head).encode())
        while n == 0 or f.tell() < size:
            f.write(block)
            n += len(rows)
    return n


def big_torch_table(path: Path, size: int) -> int:
    lines = (DATA / "torch_table_cuda.txt").read_text().splitlines(keepends=True)
    seps = [i for i, ln in enumerate(lines) if ln.startswith("---")]
    head, body, tail = lines[: seps[1] + 1], lines[seps[1] + 1 : seps[2]], lines[seps[2] :]
    block = "".join(body).encode()
    n = 0
    with path.open("wb") as f:
        f.write("".join(head).encode())
        while n == 0 or f.tell() < size:
            f.write(block)
            n += len(body)
        f.write("".join(tail).encode())
    return n


PEAK = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def peak_rss(tmp: Path, flag: str, path: Path) -> int:
    """Peak RSS (bytes) of `gpuopt evidence add SESSION FLAG PATH` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ledger = tmp / "l.db"
    if not ledger.exists():
        repo = tmp / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        sid = subprocess.run(
            [sys.executable, "-m", "tui", "--ledger", str(ledger), "new", "--repo", str(repo),
             "--title", "t", "--workload", "w=true"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        (tmp / "sid").write_text(sid)
    sid = (tmp / "sid").read_text()
    cmd = [sys.executable, "-m", "tui", "--ledger", str(ledger), "evidence", "add", sid,
           flag, str(path)]  # fmt: skip
    out = subprocess.run([sys.executable, "-c", PEAK, *cmd], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


@pytest.mark.parametrize(
    ("flag", "make"), [("--ncu-csv", big_ncu_csv), ("--torch-profile", big_torch_table)]
)
@pytest.mark.slow
def test_a_large_profile_costs_little_memory(tmp_path, flag, make):
    small, large = tmp_path / "small", tmp_path / "large"
    make(small, 1)
    make(large, 24 * MB)
    base = peak_rss(tmp_path, flag, small)
    peak = peak_rss(tmp_path, flag, large)
    # Reading the whole file cost twice its size and more; a stream costs a few buffers.
    assert peak - base < 16 * MB, (base / MB, peak / MB)


def test_streamed_summary_and_hash_are_of_the_whole_file(tmp_path):
    path = tmp_path / "p.csv"
    rows = big_ncu_csv(path, 3 * MB)
    summary = ev.summarize_file(path, ev.parse_ncu_csv)
    assert summary["file"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert summary["file"]["bytes"] == path.stat().st_size
    whole = ev.parse_ncu_csv(path.read_text())
    assert {k: v for k, v in summary.items() if k != "file"} == whole
    assert sum(k["launches"] for k in whole["top_kernels"]) <= rows
    assert json.dumps(summary)  # plain data for the ledger
    tpath = tmp_path / "t.txt"
    big_torch_table(tpath, 1 * MB)
    tsum = ev.summarize_file(tpath, ev.parse_torch_table)
    assert {k: v for k, v in tsum.items() if k != "file"} == ev.parse_torch_table(tpath.read_text())
    assert tsum["file"]["sha256"] == hashlib.sha256(tpath.read_bytes()).hexdigest()


def test_a_file_of_one_endless_line_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "one-line.csv"
    path.write_bytes(b'"ID","Kernel Name",' + b"x" * (3 * MB))
    with pytest.raises(ev.EvidenceError, match="longer than 1 MiB"):
        ev.summarize_file(path, ev.parse_ncu_csv)
    with pytest.raises(ev.EvidenceError, match="longer than 1 MiB"):
        ev.summarize_file(path, ev.parse_torch_table)


def test_a_field_over_the_csv_limit_is_one_clear_error(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text('"ID","Kernel Name"\n"1","' + "k" * 200_000 + '"\n')
    with pytest.raises(ev.EvidenceError, match="cannot be read"):
        ev.summarize_file(path, ev.parse_ncu_csv)
