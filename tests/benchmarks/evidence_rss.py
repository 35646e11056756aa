"""Peak RSS of `gpuopt evidence add` on a large profile (a 200 MB file by default).

    .venv/bin/python -m tests.benchmarks.evidence_rss [MEGABYTES]

Prints, for an Nsight Compute CSV and a torch.profiler table, the peak RSS of the command
on a tiny file and on the large one (each in a fresh process, read with getrusage).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tests.session.test_evidence_large import MB, big_ncu_csv, big_torch_table, peak_rss


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as tmp:
        for flag, make in (("--ncu-csv", big_ncu_csv), ("--torch-profile", big_torch_table)):
            base_dir = Path(tmp) / flag.strip("-")
            base_dir.mkdir()
            small, large = base_dir / "small", base_dir / "large"
            make(small, 1)
            make(large, size * MB)
            base = peak_rss(base_dir, flag, small)
            t0 = time.perf_counter()
            peak = peak_rss(base_dir, flag, large)
            took = time.perf_counter() - t0
            print(
                f"{flag:16} {large.stat().st_size / MB:6.0f} MiB file: peak RSS "
                f"{peak / MB:6.0f} MiB (tiny file {base / MB:.0f} MiB) in {took:.1f} s"
            )
            large.unlink()


if __name__ == "__main__":
    main()
