"""A process that opens a ledger for writing on cue (run by path from the ledger tests).

    python ledger_opener.py LEDGER

Imports everything, prints `ready`, waits for a line on stdin, opens LEDGER (creating it
when it is not there yet), and prints `opened` or `failed: REASON`.
"""

from __future__ import annotations

import sys

from ledger import Ledger
from ledger.db import LedgerError


def main() -> int:
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        with Ledger.open(sys.argv[1]) as ledger:
            ledger.check()
    except LedgerError as exc:
        print(f"failed: {exc}", flush=True)
        return 1
    print("opened", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
