"""`gpuopt sessions` fits any width: on a real terminal (a pseudo-terminal of a given size)
every line fits and long titles end in "…"; through a pipe it prints plain tab-separated
lines; `--json` keeps whole values; archived sessions only with `--all`."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.cells import cell_len

from ledger import Ledger
from session import models as m

ROOT = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
ENV |= {"PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LONG = "fuse the softmax into the attention epilogue and keep the row max in registers " * 4
WIDE = "融合注意力核的尾声" * 6  # two cells per character
REPO = "/home/me/projects/some/deeply/nested/checkout/of/the/repository"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("width") / "ledger.db"
    contract = m.Contract(workloads=[m.Workload(name="e2e", command="true")])
    with Ledger.open(path) as ledger:
        ledger.put(
            m.Session(id="5e5510000001", title=LONG, repo=REPO, contract=contract),
            m.Session(id="5e5510000002", title=WIDE, repo="/r", contract=contract),
            m.Session(id="5e5510000003", title="set aside", repo="/r", contract=contract,
                      archived=True),
        )  # fmt: skip
    return path


def on_a_terminal(cols: int, *args: str) -> tuple[int, list[str]]:
    """Run `gpuopt ARGS` on a pseudo-terminal `cols` wide: (exit code, screen lines)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", *args], stdin=slave, stdout=slave, stderr=slave,
        env=ENV, cwd=ROOT,
    )  # fmt: skip
    os.close(slave)
    out = b""
    while select.select([master], [], [], 30)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other side closed (Linux says EIO)
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    code = proc.wait(timeout=30)
    text = ANSI.sub("", out.decode())
    return code, [line.rstrip("\r") for line in text.split("\n") if line.strip()]


@pytest.mark.parametrize("cols", [30, 52, 80, 120, 200])
def test_every_line_fits_the_terminal(db: Path, cols: int) -> None:
    code, lines = on_a_terminal(cols, "--ledger", str(db), "sessions")
    assert code == 0, lines
    assert len(lines) == 3, lines  # the header and two sessions, one line each
    assert all(cell_len(line) <= cols for line in lines), [cell_len(x) for x in lines]
    assert lines[0].split()[:2] == ["id", "title"]
    assert any(line.startswith("5e5510000001  fuse the") for line in lines)
    assert any("…" in line for line in lines)  # the long title is cut, and says so
    assert "set aside" not in "\n".join(lines)  # archived


def test_a_wide_terminal_shows_every_column(db: Path) -> None:
    _, lines = on_a_terminal(200, "--ledger", str(db), "sessions")
    assert lines[0].split() == [
        "id", "title", "repo", "created", "baselines", "hypotheses", "variants", "rounds",
    ]  # fmt: skip
    assert "/home/me/projects" in lines[1] + lines[2]


def test_all_shows_archived_sessions_marked(db: Path) -> None:
    _, lines = on_a_terminal(80, "--ledger", str(db), "sessions", "--all")
    assert any(line.startswith("5e5510000003  (archived) set aside") for line in lines)


def test_off_a_terminal_lines_are_tab_separated(db: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--ledger", str(db), "sessions", "--all"],
        capture_output=True, text=True, env={**ENV, "COLUMNS": "40"}, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr == ""
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [len(r) for r in rows] == [9, 9, 9]  # no width limit: no column dropped
    by_id = {r[0]: r for r in rows}
    assert by_id["5e5510000001"][1:3] == [LONG, REPO]  # whole, not cut to the width
    assert by_id["5e5510000002"][1] == WIDE
    assert by_id["5e5510000003"][8] == "archived" and by_id["5e5510000001"][8] == ""
    assert by_id["5e5510000001"][4:8] == ["0", "0", "0", "0"]


def test_a_tab_or_newline_in_a_title_cannot_break_a_line(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    contract = m.Contract(workloads=[m.Workload(name="e2e", command="true")])
    with Ledger.open(path) as ledger:
        ledger.put(m.Session(title="a\tb\nc", repo="/r", contract=contract))
    result = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--ledger", str(path), "sessions"],
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60,
    )  # fmt: skip
    [line] = result.stdout.splitlines()
    assert line.split("\t")[1] == "a\\tb\\nc"


def test_json_keeps_whole_values_and_says_archived(db: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--ledger", str(db), "sessions", "--json"],
        capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=60,
    )  # fmt: skip
    rows = json.loads(result.stdout)
    assert {r["id"]: r["title"] for r in rows} == {"5e5510000001": LONG, "5e5510000002": WIDE}
    assert all(r["archived"] is False for r in rows)
