"""The kept-open status file's descriptor can be closed by other code in the process and
its number handed to another file: a loaded full suite read `true`'s peak as the pytest
worker's 449 MB because the floor came from whatever file now held that number. The floor
must still be our own VmHWM."""

from __future__ import annotations

import os
import subprocess
import sys

from measure import peak_rss


def _fresh_hwm_kib() -> int:
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_status_descriptor_taken_over_by_another_process_file_is_not_read_as_ours():
    peak_rss.own_peak_kib()  # opens and keeps the descriptor
    assert peak_rss._status is not None
    fd = peak_rss._status[1]
    small = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        other = os.open(f"/proc/{small.pid}/status", os.O_RDONLY)
        os.dup2(other, fd)  # what a double close elsewhere followed by an open does
        os.close(other)
        ours = _fresh_hwm_kib()
        assert (peak_rss._status_hwm_kib() or 0) >= ours  # the file itself, read again
        # the cheap read (getrusage) gives the kernel's batched count, within the slack
        assert peak_rss.own_peak_kib() >= ours - peak_rss.counter_slack_kib()
    finally:
        small.communicate(b"")


def test_a_status_descriptor_taken_over_by_a_plain_file_is_not_read_as_ours(tmp_path):
    peak_rss.own_peak_kib()
    assert peak_rss._status is not None
    fd = peak_rss._status[1]
    fake = tmp_path / "fake"
    fake.write_bytes(b"VmHWM:\t     1 kB\n")
    other = os.open(fake, os.O_RDONLY)
    os.dup2(other, fd)
    os.close(other)
    assert (peak_rss._status_hwm_kib() or 0) >= _fresh_hwm_kib()  # the file itself
    assert peak_rss.own_peak_kib() >= _fresh_hwm_kib() - peak_rss.counter_slack_kib()
