"""`gpuopt sessions` on a terminal: an id is never cut (the other columns give way first,
down to the id alone), and COLUMNS=0 lists the sessions at the terminal's own width."""

from __future__ import annotations

import fcntl
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

from ledger import Ledger
from session import models as m

ROOT = Path(__file__).resolve().parents[2]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
ENV |= {"PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
IDS = ("9acf072d77e1", "5e5510000002")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fixm-width") / "ledger.db"
    contract = m.Contract(workloads=[m.Workload(name="e2e", command="true")])
    with Ledger.open(path) as ledger:
        for sid in IDS:
            ledger.put(m.Session(id=sid, title="fuse the softmax " * 3, repo="/r",
                                 contract=contract))  # fmt: skip
    return path


def on_a_terminal(cols: int, env: dict[str, str], *args: str) -> tuple[int, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", *args], stdin=slave, stdout=slave, stderr=slave,
        env=env, cwd=ROOT,
    )  # fmt: skip
    os.close(slave)
    out = b""
    while select.select([master], [], [], 30)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(timeout=30), ANSI.sub("", out.decode()).replace("\r", "")


@pytest.mark.parametrize("cols", [8, 14, 20, 21, 22, 24])
def test_an_id_is_never_cut(db: Path, cols: int) -> None:
    code, text = on_a_terminal(cols, ENV, "--ledger", str(db), "sessions")
    assert code == 0, text
    assert "…" not in text.split("\n")[1][:12], text
    for sid in IDS:  # whole, copyable (a terminal narrower than an id wraps it)
        assert sid in text.replace("\n", ""), text


def test_columns_zero_still_lists_the_sessions(db: Path) -> None:
    code, text = on_a_terminal(80, {**ENV, "COLUMNS": "0"}, "--ledger", str(db), "sessions")
    assert code == 0
    lines = [line for line in text.split("\n") if line.strip()]
    assert len(lines) == 3 and lines[0].split()[:2] == ["id", "title"], text
    assert all(len(line) <= 80 for line in lines)
