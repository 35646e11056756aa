"""What the Slurm journal costs: a durable line per record on the node, and its import on
the login side (first, again from the stored offset, and again from the journal's start).

    python -m tests.benchmarks.journal [RUNS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from ledger.journal_import import import_entries
from measure.journal import JournalWriter, read_from
from session import models as m
from session.ledger_access import Ledger


def main(runs: int = 2000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        session = m.Session(title="bench", repo="/r", contract=m.Contract(
            workloads=[m.Workload(name="w", command="true")]))  # fmt: skip
        journal = root / "journal.jsonl"
        t0 = time.perf_counter()
        with JournalWriter(journal, "J") as w:
            w.write("row", model="Session", data=session.model_dump(mode="json"))
            for i in range(runs):
                run = m.Run(session_id=session.id, arm="baseline", workload="w", block=i,
                            value=1.0 + i * 1e-4, stdout_tail="x" * 200)  # fmt: skip
                w.write("row", model="Run", data=run.model_dump(mode="json"))
        write_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with JournalWriter(root / "grouped.jsonl", "G") as w:
            for block in range(0, runs, 10):  # a block's runs, stored in one transaction
                w.write_many([
                    ("row", {"model": "Run", "data": m.Run(
                        session_id=session.id, arm="baseline", workload="w", block=i,
                        stdout_tail="x" * 200).model_dump(mode="json")})
                    for i in range(block, min(block + 10, runs))
                ])  # fmt: skip
        grouped_s = time.perf_counter() - t0
        size = journal.stat().st_size
        with Ledger.open(root / "ledger.db") as led:
            t0 = time.perf_counter()
            first = import_entries(led, "J", list(read_from(journal, 0)))
            import_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = import_entries(led, "J", list(read_from(journal, first.offset)))
            again_s = time.perf_counter() - t0
            entries = [({**e, "journal": "K"}, end) for e, end in read_from(journal, 0)]
            t0 = time.perf_counter()
            rescan = import_entries(led, "K", entries)
            rescan_s = time.perf_counter() - t0
    print(f"journal: {runs} run lines, {size / runs:.0f} bytes each")
    print(f"  write, fsync per line:        {write_s / runs * 1e6:8.1f} µs/line")
    print(f"  write, one fsync per 10 lines:{grouped_s / runs * 1e6:8.1f} µs/line")
    print(f"  first import:                 {import_s / runs * 1e6:8.1f} µs/line "
          f"({first.added} added)")  # fmt: skip
    print(f"  again from the stored offset: {again_s * 1e3:8.2f} ms ({again.lines} lines)")
    print(f"  again from the start:         {rescan_s / runs * 1e6:8.1f} µs/line "
          f"({rescan.added} added, {rescan.updated} updated, {rescan.same} same)")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
