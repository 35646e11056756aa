"""A process that writes transactions to a ledger (run by path from the ledger tests).

    python ledger_writer.py LEDGER TAG COUNT START_AT [CHILDREN] [SAMPLES]

Waits until the epoch time START_AT, then writes COUNT transactions (0: until killed).
Each transaction writes one session `TAG-i`, CHILDREN hypotheses of it, SAMPLES telemetry
samples and, last, a marker (an evidence row titled "marker"). After each COMMIT it prints
`committed TAG-i` (flushed), so the parent knows which transactions must be complete.
"""

from __future__ import annotations

import sys
import time

from ledger import Ledger
from session import models as m


def main() -> int:
    path, tag, count, start_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    children = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    samples = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    contract = m.Contract(workloads=[m.Workload(name="w", command="true")])
    with Ledger.open(path) as ledger:
        print("ready", flush=True)
        time.sleep(max(0.0, start_at - time.time()))
        i = 0
        while count == 0 or i < count:
            sid = f"{tag}-{i}"
            with ledger.write():
                ledger.put(m.Session(id=sid, title=f"session {sid}", repo="/r", contract=contract))
                ledger.put(
                    *(
                        m.Hypothesis(
                            id=f"{sid}-h{j}", session_id=sid, title=f"h{j}", mechanism="x" * 200
                        )
                        for j in range(children)
                    )
                )
                ledger.insert_samples(
                    (sid, f"{sid}-run", 1_000_000 * i + k, "host", None, *([1.0] * 15))
                    for k in range(samples)
                )
                ledger.put(m.Evidence(id=f"{sid}-marker", session_id=sid, title="marker"))
            print(f"committed {sid}", flush=True)
            i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
