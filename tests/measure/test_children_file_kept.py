"""The sweep after every run reads this process's children from a /proc file kept open
(re-read from its start). What it reads must stay our own children, as they are now, even
when other code closed that descriptor and its number went to another file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from measure import orphans


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)  # fmt: skip


def test_the_kept_file_says_the_children_as_they_are_now() -> None:
    before = set(orphans._children())
    child = _sleeper()
    try:
        assert set(orphans._children()) - before == {child.pid}
    finally:
        child.communicate(b"")
    assert child.pid not in orphans._children()


def test_a_kept_descriptor_taken_over_by_another_file_is_not_read(tmp_path: Path) -> None:
    orphans._children()
    kept = orphans._main_children
    assert kept is not None and kept[0] == os.getpid()
    fake = tmp_path / "fake"
    fake.write_bytes(b"1 ")  # would read as init, a child of ours
    other = os.open(fake, os.O_RDONLY)
    os.dup2(other, kept[1])  # what a double close elsewhere followed by an open does
    os.close(other)
    child = _sleeper()
    try:
        found = orphans._children()
        assert child.pid in found and 1 not in found
    finally:
        child.communicate(b"")
