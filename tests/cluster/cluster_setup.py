"""Helpers of the cluster tests (not collected): a session with a sleep workload, its
baseline and two variants, and the one-node Slurm cluster .ci/run starts
(scripts/slurm_local.sh), or the exact reason it is not there."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git

from tui.cli import main

SLURM_DIR = Path(os.environ.get("GPUOPT_SLURM_DIR", "/tmp/gpuopt-slurm"))


def slurm_unavailable() -> str | None:
    """Why the tests cannot reach a Slurm cluster here, or None when they can."""
    conf = os.environ.get("SLURM_CONF") or str(SLURM_DIR / "slurm.conf")
    why_file = SLURM_DIR / "unavailable"
    if why_file.exists():
        return f"scripts/slurm_local.sh could not start a cluster: {why_file.read_text().strip()}"
    if not Path(conf).exists():
        return f"no Slurm cluster: {conf} missing (scripts/slurm_local.sh start makes one)"
    try:
        done = subprocess.run(
            ["scontrol", "ping"], capture_output=True, text=True, timeout=30,
            env={**os.environ, "SLURM_CONF": conf},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"scontrol ping failed: {exc}"
    if "UP" not in done.stdout:
        return f"slurmctld is not answering: {(done.stdout + done.stderr).strip()}"
    return None


# Held by the Slurm test that runs: one at a time, on whichever workers they land (a
# selection of only Slurm tests, or work stealing, can spread them over several), so the
# one-node cluster never holds another test's job beside a test's own.
SLURM_TESTS_LOCK = Path(tempfile.gettempdir()) / "gpuopt-slurm-tests.lock"


@pytest.fixture
def slurm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    why = slurm_unavailable()
    if why:
        pytest.skip(why)
    monkeypatch.setenv("SLURM_CONF", os.environ.get("SLURM_CONF") or str(SLURM_DIR / "slurm.conf"))
    with SLURM_TESTS_LOCK.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes, or the worker dies
        yield


def gpuopt(ledger: Path, *args: str) -> int:
    return main(["--ledger", str(ledger), *args])


def sleepy_session(
    make_repo: Callable[..., Path], tmp_path: Path, sleep: float = 0.05
) -> tuple[Path, str, Path]:
    """(ledger, session id, repo): a workload that sleeps, then prints value.txt (the
    metric), its baseline, and variants `more` (1.25: SLOWER) and `same` (1.00: SAME)."""
    repo = make_repo(files={"value.txt": "1.00\n"})
    ledger = tmp_path / "ledger.db"
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        assert gpuopt(ledger, "new", "--repo", str(repo), "--title", "sleepy",
                      "--workload", f"w=sleep {sleep}; cat value.txt",
                      "--metric", "regex:(?P<value>[0-9.]+)") == 0  # fmt: skip
    sid = out.getvalue().strip()
    with redirect_stdout(StringIO()):
        assert gpuopt(ledger, "baseline", sid, "--runs", "6", "--no-telemetry") == 0
        for name, text in (("more", "1.25\n"), ("same", "1.00\n# same\n")):
            (repo / "value.txt").write_text(text)
            patch = tmp_path / f"{name}.diff"
            patch.write_text(run_git(repo, "diff"))
            run_git(repo, "checkout", "-q", "--", ".")
            assert gpuopt(ledger, "variant", "add", sid, "--name", name, "--patch", str(patch)) == 0
    return ledger, sid, repo


def cli(ledger: Path, *args: str, **kw: Any) -> subprocess.Popen[str]:
    """gpuopt in a process of its own (the login side), output captured."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.Popen(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw,
    )  # fmt: skip


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120.0) -> Any:
    """Poll an event (a ledger row, a job state) until it holds; fail with `what`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def query(ledger: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def jobs_of(ledger: Path) -> list[dict[str, Any]]:
    return [
        {"uuid": k.split(":", 1)[1], **json.loads(v)}
        for k, v in query(ledger, "SELECT key, value FROM meta WHERE key LIKE 'slurm-job:%'")
    ]
