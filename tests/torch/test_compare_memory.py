"""A 100 MB-output problem compared under a stated RSS bound: each side's worker process
stays within 3× one output above its RSS right after `import torch` (its input is small,
so this is the comparison's and the capture's own cost: the output, the repeat call's
output, the memory-mapped reference trial, 256 Ki-element float64 chunks). The old way held
every trial of both sides plus float64 copies and masks of each: about 70× one output."""

from __future__ import annotations

from pathlib import Path

import pytest

from measure import harness

PROBLEM = """
import torch
from torch import nn

class Model(nn.Module):
    def forward(self, x):  # 256 KiB in, 100 MB out, no intermediate of that size
        return torch.mul(x.unsqueeze(0).expand(384, -1, -1), 1.5)

def get_inputs():
    return [torch.randn(64, 1024)]

def get_init_inputs():
    return []
"""

OUTPUT_BYTES = 384 * 64 * 1024 * 4  # 100.7 MB
# Measured on a shared 2-core machine: the saving side 2.1–2.3×, the comparing side 2.4×
# with the check's timed loop on. It was 4.1–5.5×: glibc raised its mmap threshold after
# the first large free, and the comparison's 2 MiB chunk temporaries then fragmented the
# heap by one chunk per chunk compared; a check's process now fixes the threshold at 1 MiB.
BOUND = 3.0
# torch's two threads beside the suite's other worker on 2 cores waited on each other: the
# saving side took 9 s instead of 1.6 s (the bound is the same with one thread: 1.2x/2.4x).
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_a_100mb_output_is_compared_in_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text(PROBLEM)
    common = {"mode": "outputs", "kind": "kernelbench", "spec": "big.py", "trials": 2, "seed": 0}
    common["stress"] = False
    (ref,) = harness.run_jobs(
        [{**common, "name": "ref", "save": str(tmp_path / "ref")}],
        tmp_path,
        env=ONE_THREAD,
        timeout_s=1800,
    )
    assert ref.ok, ref.output_tail
    new_job = {
        **common,
        "name": "new",
        "save": str(tmp_path / "new"),
        "compare_to": str(tmp_path / "ref"),
        "inputs_from": str(tmp_path / "big.py"),
    }
    (new,) = harness.run_jobs([new_job], tmp_path, env=ONE_THREAD, timeout_s=1800)  # loaded box
    assert new.ok, new.output_tail
    assert new.data["passed"] and new.data["bit_identical"]
    assert new.data["trials"] == 2  # two seeds, one at a time
    for side in (ref, new):
        above = side.data["peak_rss_bytes"] - side.data["rss_after_import_bytes"]
        print(f"{side.data['name']}: {above / OUTPUT_BYTES:.2f}× one output above the import")
        assert 0.9 * OUTPUT_BYTES < above <= BOUND * OUTPUT_BYTES, above / OUTPUT_BYTES
    st = new.data["stats"][0]
    assert st["ulp_sampled"] and st["ulp_max"] == 0.0  # quantiles from a sample, max exact
    files = sorted(p.name for p in (tmp_path / "ref").iterdir())
    assert files[0] == "index.json" and len(files) == 3  # one file per trial, on disk
