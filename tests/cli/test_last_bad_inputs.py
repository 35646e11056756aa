"""The last bad inputs (issue 25, items 6 and 7): each is exit 2 with one line, before any
work; every numeric option has a stated range; an export never replaces someone's file
without a word; serving beyond localhost says who can read it."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ledger import Ledger
from session import models as m
from tui.cli import build_parser
from tui.commands.parsers.numbers import number

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HUGE = "99999999999999999999"


def gpuopt(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        env=ENV, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def _session(db: Path) -> m.Session:
    s = m.Session(
        title="t",
        repo=str(db.parent),
        contract=m.Contract(workloads=[m.Workload(name="w", command="true")]),
    )
    with Ledger.open(db) as ledger:
        ledger.put(s)
    return s


def one_line_usage(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "internal error" not in done.stderr
    for w in words:
        assert w in done.stderr, done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["baseline", "S", "--runs", HUGE],
        ["baseline", "S", "--max-runs", HUGE],
        ["baseline", "S", "--warmup", "-1"],
        ["compare", "--runs", HUGE, "true", "true"],
        ["round", "S", "--max-blocks", HUGE],
        ["round", "S", "--seed", HUGE],
        ["round", "S", "--budget", "1e400"],
        ["demo", "--runs", HUGE],
        ["review", "--serve", "--port", "-1"],
        ["review", "--serve", "--port", "70000"],
        ["new", "--timeout", "nan"],
        ["telemetry", "--interval", "0"],
    ],
)
def test_numbers_out_of_range_are_one_line(tmp_path: Path, argv: list[str]) -> None:
    done = gpuopt("--ledger", str(tmp_path / "l.db"), *argv)
    one_line_usage(done, "give")


def _numeric_actions(parser: argparse.ArgumentParser, path: str = "gpuopt"):  # type: ignore[no-untyped-def]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _numeric_actions(child, f"{path} {name}")
        elif action.type in (int, float):
            yield f"{path} {action.option_strings}"


def test_every_numeric_option_has_a_range_in_its_help() -> None:
    assert list(_numeric_actions(build_parser())) == []  # each goes through numbers.number
    assert number("runs")("10") == 10
    out = gpuopt("baseline", "--help").stdout
    assert "2 to 100_000" in " ".join(out.split())


def test_empty_ledger_path_is_refused(tmp_path: Path) -> None:
    one_line_usage(gpuopt("--ledger", "", "sessions"), "--ledger")
    one_line_usage(gpuopt("sessions", "--ledger", " "), "--ledger")


@pytest.mark.slow
def test_export_keeps_a_file_that_is_not_a_record(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    s = _session(db)
    notes = tmp_path / "notes.md"
    notes.write_text("my own notes\n")
    one_line_usage(gpuopt("--ledger", str(db), "export", s.id, "-o", str(notes)), "--force")
    assert notes.read_text() == "my own notes\n"
    # an earlier record of the same session is replaced without asking (md and json)
    for fmt, name in (("md", "rec.md"), ("json", "rec.json")):
        rec = tmp_path / name
        for _ in range(2):
            done = gpuopt("--ledger", str(db), "export", s.id, "--format", fmt, "-o", str(rec))
            assert done.returncode == 0, done.stderr
    # another session's record is someone else's file too
    other = _session(tmp_path / "l2.db")
    one_line_usage(
        gpuopt(
            "--ledger", str(tmp_path / "l2.db"), "export", other.id, "-o", str(tmp_path / "rec.md")
        )
    )
    done = gpuopt("--ledger", str(db), "export", s.id, "-o", str(notes), "--force")
    assert done.returncode == 0, done.stderr
    assert notes.read_text().startswith("# Decision record: ")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
def test_serving_beyond_localhost_warns(tmp_path: Path, host: str) -> None:
    pytest.importorskip("textual_serve")
    db = tmp_path / "l.db"
    _session(db)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "review", str(db), "--serve", "--host", host,
         "--port", str(port)],
        env=ENV, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert "serving" in first, first
        if host == "0.0.0.0":
            second = proc.stderr.readline()
            assert "anyone who can reach port" in second and "ssh -L" in second, second
        else:
            assert "localhost only" in first
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    if host != "0.0.0.0":
        assert "anyone who can reach" not in (proc.stderr.read() if proc.stderr else "")
