"""A process that opens ledgers for writing on cue (run by path from the ledger tests).

    python ledger_opener.py GATE

Imports everything, then for each line on stdin: prints `ready` before it is read, waits
until the file GATE is unlocked (the test holds it locked until every opener has its
line, then lets them all go at once), opens the ledger the line names (creating it when
it is not there yet), and prints `opened` or `failed: REASON`. One process serves every
trial of a test: the import is paid once, and each opening is still a fresh connection
to a fresh path.
"""

from __future__ import annotations

import fcntl
import sys

from ledger import Ledger
from ledger.db import LedgerError


def open_one(path: str) -> str:
    try:
        with Ledger.open(path) as ledger:
            ledger.check()
    except LedgerError as exc:
        return f"failed: {exc}"
    return "opened"


def main() -> int:
    with open(sys.argv[1], "rb") as gate:
        while True:
            print("ready", flush=True)
            line = sys.stdin.readline()
            if not line:
                return 0
            print("waiting", flush=True)
            fcntl.flock(gate, fcntl.LOCK_SH)  # blocks while the test holds the gate
            fcntl.flock(gate, fcntl.LOCK_UN)
            print(open_one(line.rstrip("\n")), flush=True)


if __name__ == "__main__":
    sys.exit(main())
