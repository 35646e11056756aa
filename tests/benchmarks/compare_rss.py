"""Peak RSS of a torch correctness check against the size of one output.

    .venv/bin/python -m tests.benchmarks.compare_rss            # KernelBench-40 size: 268 MB
    .venv/bin/python -m tests.benchmarks.compare_rss --mb 100   # a smaller output

A LayerNorm problem (KernelBench level 1 #40's shape, batch 16 × 64 × 256 × 256 float32 =
268 MB of output, written here as a problem of our own) is captured on the baseline side
(saved), then run on the variant side, which compares each trial with the saved one as it
goes. Each side is one worker process; the script prints its peak RSS (VmHWM), its RSS
right after `import torch`, and the difference in units of one output. The comparison's
bound is about 3× one output above the import: the variant's input and output, plus the
reference trial memory-mapped as the comparison reads it, plus 1 Mi-element chunks.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

from measure import harness

PROBLEM = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.ln = nn.LayerNorm(shape)
    def forward(self, x):
        return self.ln(x)

def get_inputs():
    return [torch.randn({batch}, 64, 256, 256)]

def get_init_inputs():
    return [(64, 256, 256)]
"""


BOUND = 3.0  # one output, the input, and the side that waits (memory-mapped or parked)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mb", type=float, default=268.4, help="output size in MB (default 268.4)")
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--stress", action="store_true", help="add the four stress trials")
    args = p.parse_args()
    batch = max(1, round(args.mb * 1e6 / (64 * 256 * 256 * 4)))
    out_bytes = batch * 64 * 256 * 256 * 4
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ln.py").write_text(PROBLEM.format(batch=batch))
        common = {"mode": "outputs", "kind": "kernelbench", "spec": "ln.py", "seed": 0,
                  "trials": args.trials, "stress": args.stress}  # fmt: skip
        rows = []
        t0 = time.monotonic()
        (ref,) = harness.run_jobs(
            [{**common, "name": "ref", "save": str(root / "ref")}], root, timeout_s=3600
        )
        rows.append(("baseline side (capture, save)", ref, time.monotonic() - t0))
        t0 = time.monotonic()
        new_job = {**common, "name": "new", "save": str(root / "new"),
                   "compare_to": str(root / "ref"), "inputs_from": str(root / "ln.py")}  # fmt: skip
        (new,) = harness.run_jobs([new_job], root, timeout_s=3600)
        rows.append(("variant side (capture, compare)", new, time.monotonic() - t0))
        for what, r, secs in rows:
            if not r.ok:
                print(f"{what}: FAILED: {r.error}\n{r.output_tail[-2000:]}")
                return 1
            peak = int(r.data["peak_rss_bytes"])
            base = int(r.data["rss_after_import_bytes"])
            print(
                f"{what}: peak RSS {peak / 2**20:.0f} MiB, after import {base / 2**20:.0f} MiB, "
                f"above import {(peak - base) / out_bytes:.2f}× one output "
                f"({out_bytes / 1e6:.0f} MB), {secs:.1f} s"
            )
        d = new.data
        st = d["stats"][0]
        print(json.dumps({"passed": d["passed"], "trials": d["trials"],
                          "max_abs": st.get("max_abs"), "ulp_max": st.get("ulp_max"),
                          "ulp_sampled": st.get("ulp_sampled")}))  # fmt: skip
        above = (int(d["peak_rss_bytes"]) - int(d["rss_after_import_bytes"])) / out_bytes
        sides = [
            (int(r.data["peak_rss_bytes"]) - int(r.data["rss_after_import_bytes"])) / out_bytes
            for _, r, _ in rows
        ]
        worst = max(above, *sides)
        verdict = "held" if worst <= BOUND else "EXCEEDED"
        print(f"bound ({BOUND:g}× one output on either side, stress trials on or off): {verdict}")
        return 0 if worst <= BOUND and not math.isnan(worst) else 1


if __name__ == "__main__":
    sys.exit(main())
