"""A process that opens a ledger, writes to it and closes it, again and again (run by
path from the ledger tests).

    python ledger_closer.py LEDGER TAG

Each turn opens LEDGER, writes two transactions (a session with two hypotheses and 3,000
telemetry samples each), closes it and prints `closed N`; it stops when its stdin closes.
A close that is the ledger's last checkpoints it (the WAL's pages copied into the main
file): a process per close, as a person's `gpuopt` commands are, paid a Python start for
each; here every close costs only its own work.
"""

from __future__ import annotations

import select
import sys

from ledger import Ledger
from session import models as m

SAMPLES = 3000


def one_turn(path: str, tag: str) -> None:
    contract = m.Contract(workloads=[m.Workload(name="w", command="true")])
    with Ledger.open(path) as ledger:
        for i in range(2):
            sid = f"{tag}-{i}"
            with ledger.write():
                ledger.put(m.Session(id=sid, title=f"session {sid}", repo="/r", contract=contract))
                ledger.put(
                    *(
                        m.Hypothesis(id=f"{sid}-h{j}", session_id=sid, title=f"h{j}")
                        for j in range(2)
                    )
                )
                ledger.insert_samples(
                    (sid, f"{sid}-run", k, "host", None, *([1.0] * 15)) for k in range(SAMPLES)
                )


def main() -> int:
    path, tag = sys.argv[1], sys.argv[2]
    turn = 0
    while not select.select([sys.stdin], [], [], 0)[0]:  # stdin readable: closed, stop
        one_turn(path, f"{tag}{turn}")
        turn += 1
        print(f"closed {turn}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
