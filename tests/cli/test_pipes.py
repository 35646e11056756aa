"""Commands that stream into a pipe whose reader goes away (`gpuopt telemetry | head -3`):
a view ends at once with status 0, a measurement goes on silenced (test_round_output_closed);
neither prints a traceback. Real pipes, closed by the reader after its first line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")


def _read_one_line_and_leave(*argv: str) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.stdout.readline()  # as `head -1` reads it
        proc.stdout.close()  # then goes away: the next write fails with EPIPE
        rc = proc.wait(timeout=60)  # a view that ignores its reader never gets here
        return rc, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("source", [[], ["--replay", "clean"]], ids=["host", "replay"])
def test_telemetry_into_a_pipe_ends_when_its_reader_leaves(source: list[str]) -> None:
    rc, err = _read_one_line_and_leave("telemetry", "--interval", "0.1", *source)
    assert rc == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_compare_into_a_pipe_whose_reader_left_is_quiet() -> None:
    rc, err = _read_one_line_and_leave(
        "compare", f"{sys.executable} -c pass", f"{sys.executable} -c pass", "--runs", "3",
        "--max-runs", "3", "--warmup", "0",
    )  # fmt: skip
    assert rc == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_a_baseline_whose_progress_reader_left_is_recorded(make_repo, tmp_path: Path) -> None:
    """`gpuopt baseline ... 2>&1 | head -1`: the progress goes quiet, the baseline is
    measured to its end, kept, and the command exits 0 with no traceback."""
    from engine_procs import make_session

    from ledger import Ledger
    from session import models as m

    _repo, ledger, sid = make_session(make_repo, tmp_path, "cat value.txt")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--ledger", str(ledger), "baseline", sid, "--runs", "6",
         "--no-telemetry"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    assert proc.stderr is not None
    assert proc.stderr.readline()
    proc.stderr.close()  # the reader leaves after its first line
    assert proc.wait(timeout=120) == 0
    with Ledger.open(ledger) as led:
        latest = led.latest_baseline(sid)
    assert latest is not None and latest.reproducibility is m.Reproducibility.REPRODUCIBLE
    assert latest.runs_per_workload >= 6


def test_telemetry_into_head_as_the_issue_typed_it() -> None:
    """`timeout 20 bash -c 'gpuopt telemetry | head -3'` (issue 22): status 0, three lines,
    no traceback; the timeout only bounds a failure."""
    gpuopt = f"{sys.executable} -m tui"
    proc = subprocess.run(
        ["timeout", "60", "bash", "-c", f"set -o pipefail; {gpuopt} telemetry | head -3"],
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 3, proc.stdout
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def _into_a_gone_reader(argv: list[str], stream: str = "stdout") -> tuple[int, str]:
    """Run gpuopt with `stream` a pipe whose reader left before the first write (every
    write fails with EPIPE): (exit status, the other stream's text)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    where = {"stdout": write_end, "stderr": subprocess.PIPE}
    if stream == "stderr":
        where = {"stdout": subprocess.DEVNULL, "stderr": write_end}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", *argv], text=True, env=ENV, cwd=ROOT, **where
    )  # type: ignore[call-overload]
    os.close(write_end)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, (err if stream == "stdout" else out) or ""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A ledger with one session, its baseline and a 2-block round (shared: read only)."""
    sys.path.insert(0, str(ROOT / "tests" / "ledger"))
    from overlap import prepare

    where = tmp_path_factory.mktemp("pipes")
    path, sid = prepare(where)
    code, err = _into_a_gone_reader(
        ["--ledger", str(path), "round", sid, "--min-blocks", "2", "--max-blocks", "2"]
    )
    assert code == 0, err
    return path, sid


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "{sid}"],
        ["export", "{sid}", "--format", "json"],
        ["sessions"],
        ["sessions", "--json"],
        ["variant", "list", "{sid}"],
        ["hypothesis", "list", "{sid}"],
        ["telemetry", "--once", "--json"],
        ["telemetry", "--scenarios"],
    ],
    ids=lambda a: " ".join(a).replace("{sid}", "S"),
)
@pytest.mark.slow
def test_a_listing_into_a_pipe_whose_reader_left_is_quiet(recorded, argv: list[str]) -> None:
    path, sid = recorded
    code, err = _into_a_gone_reader(["--ledger", str(path), *(a.format(sid=sid) for a in argv)])
    assert code == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
@pytest.mark.slow
def test_a_round_whose_reader_left_before_it_began_completes(recorded, stream: str) -> None:
    """The round's table (stdout) or its progress (stderr) into a pipe already gone: the
    measurement is no less kept, and nothing is said about the pipe."""
    from ledger import Ledger
    from session import models as m

    path, sid = recorded
    code, other = _into_a_gone_reader(
        ["--ledger", str(path), "round", sid, "--min-blocks", "2", "--max-blocks", "2"], stream
    )
    assert code == 0, other
    assert "Traceback" not in other and "BrokenPipe" not in other
    with Ledger.open(path) as ledger:
        last = ledger.list(m.Round, session_id=sid)[-1]
    assert last.status is m.RoundStatus.COMPLETED and last.blocks == 2


def test_compare_whose_reader_left_before_it_began_is_quiet() -> None:
    for stream in ("stdout", "stderr"):
        code, other = _into_a_gone_reader(
            ["compare", f"{sys.executable} -c pass", f"{sys.executable} -c pass", "--runs", "3",
             "--max-runs", "3", "--warmup", "0"], stream,
        )  # fmt: skip
        assert code == 0, other
        assert "Traceback" not in other and "BrokenPipe" not in other
