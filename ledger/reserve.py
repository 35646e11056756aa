"""Room kept beside the ledger for closing what is open when the disk fills.

A round or baseline that meets a full disk must still be stored as ended (failed, with
the reason). Writing that needs room the full disk no longer has, so while gpuopt
conducts one it holds a small file of zeros next to the ledger (`LEDGER-reserve`, on the
same file system); when a write fails, the closing step deletes it, and the closing write
fits in the room it gave back. The reserve is a file of its own: the ledger's own files
are never opened with plain I/O (see ledger.db on POSIX locks).
"""

from __future__ import annotations

import os
from pathlib import Path

RESERVE_BYTES = 4 * 1024 * 1024  # many times one closing transaction's WAL frames
SUFFIX = "-reserve"


def reserve_path(ledger_path: Path) -> Path:
    return ledger_path.with_name(ledger_path.name + SUFFIX)


def hold(ledger_path: Path) -> bool:
    """Make sure the reserve exists (whole); whether it does. Never raises: a disk too
    full to hold it, or a read-only directory, leaves the next start to close things."""
    path = reserve_path(ledger_path)
    try:
        if path.stat().st_size >= RESERVE_BYTES:
            return True
    except OSError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:  # a file system without fallocate: write the zeros
            os.lseek(fd, 0, os.SEEK_SET)
            zeros = bytes(65536)
            for _ in range(RESERVE_BYTES // len(zeros)):
                os.write(fd, zeros)
        os.fsync(fd)
        return True
    except OSError:
        os.close(fd)
        fd = -1
        path.unlink(missing_ok=True)  # a part reserve is no reserve
        return False
    finally:
        if fd >= 0:
            os.close(fd)


def release(ledger_path: Path) -> bool:
    """Give the reserve's room back to the file system; whether there was one."""
    try:
        reserve_path(ledger_path).unlink()
        return True
    except OSError:
        return False
