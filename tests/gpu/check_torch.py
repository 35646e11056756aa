"""GPU check of the torch harness: run on a machine with an NVIDIA GPU and CUDA torch.

    python -m tests.gpu.check_torch

It builds a small repository in a temporary directory (a naive softmax and an MLP as the
baseline; torch.softmax and a fused-bias MLP as the variant), then through the same worker
the engine uses checks: CUDA-event timing with and without the L2 flush, kernel counts,
allocation statistics and peak bytes, and a correctness comparison on the GPU. It prints a
report and exits 1 if a check failed, 0 if all passed, and 0 with a clear line when there is
no GPU (nothing to check here).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import harness

BASE = {
    "kern/__init__.py": "",
    "kern/sm.py": """
import torch
def naive(x):
    m = x.max(dim=-1, keepdim=True).values
    e = (x - m).exp()
    return e / e.sum(dim=-1, keepdim=True)
def bench(device, dtype, seed):
    return {"fn": naive, "inputs": [torch.randn(4096, 1024, device=device, dtype=dtype)]}
def small(device, dtype, seed):
    return {"fn": naive, "inputs": [torch.randn(256, 1024, device=device, dtype=dtype)]}
""",
    "kern/mlp.py": """
import torch
from torch import nn
def bench(device, dtype, seed, training):
    model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).to(device, dtype)
    x = torch.randn(64, 512, device=device, dtype=dtype)
    return {"fn": model, "inputs": [x], "params": model}
""",
}
VARIANT = {
    "kern/sm.py": """
import torch
def fast(x):
    return torch.softmax(x, dim=-1)
def bench(device, dtype, seed):
    return {"fn": fast, "inputs": [torch.randn(4096, 1024, device=device, dtype=dtype)]}
def small(device, dtype, seed):
    return {"fn": fast, "inputs": [torch.randn(256, 1024, device=device, dtype=dtype)]}
""",
}

results: list[tuple[bool, str]] = []
# --cpu: run the same steps on a CPU to try the script itself; GPU-only checks are then
# reported but not counted.
CPU_DRY_RUN = "--cpu" in sys.argv


def check(ok: bool, what: str, gpu_only: bool = False) -> None:
    if CPU_DRY_RUN and gpu_only:
        print(f"  [{'ok' if ok else 'n/a'}] {what} (GPU only)", flush=True)
        return
    results.append((ok, what))
    print(f"  [{'ok' if ok else 'FAIL'}] {what}", flush=True)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text.lstrip("\n"))


def timed(cwd: Path, spec: str, *options: str) -> dict:
    cmd, _, _ = harness.workload_command("torch", spec, options=list(options))
    r = harness.run_worker(cmd, cwd, timeout_s=300)
    if not r.ok:
        print(r.output_tail)
        return {}
    return r.data


def main() -> int:
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch; print(torch.cuda.is_available(), torch.__version__,"
            " torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')",
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        print(f"torch cannot be imported: {probe.stderr.strip().splitlines()[-1:]}")
        return 0
    available, version, *name = probe.stdout.split(maxsplit=2)
    if available != "True" and not CPU_DRY_RUN:
        print(f"NO GPU: torch {version} sees no CUDA device; nothing to check on this machine.")
        return 0
    print(f"torch {version} on {' '.join(name).strip()}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        repo = top / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        write(repo, BASE)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        base_commit = git(repo, "rev-parse", "HEAD")
        write(repo, VARIANT)
        git(repo, "commit", "-qam", "variant")
        variant_commit = git(repo, "rev-parse", "HEAD")
        base, new = top / "base", top / "new"
        git(repo, "worktree", "add", "-q", "--detach", str(base), base_commit)
        git(repo, "worktree", "add", "-q", "--detach", str(new), variant_commit)

        print("timing (CUDA events)")
        t = timed(base, "kern.sm:bench")
        check(
            t.get("clock") == "cuda_event", f"clock is CUDA events: {t.get('clock')}", gpu_only=True
        )
        check(
            str(t.get("device", "")).startswith("cuda"),
            f"device recorded: {t.get('device')}",
            gpu_only=True,
        )
        check(
            t.get("l2_flush_bytes", 0) >= 64 * 2**20,
            f"L2 flush buffer {t.get('l2_flush_bytes')} B",
            gpu_only=True,
        )
        check(
            t.get("samples", 0) >= 10,
            f"{t.get('samples')} samples, median {t.get('gpuopt_value')} ms",
        )
        print("steady state (warm-up until stable; the caching allocator)")
        check(
            bool(t.get("steady")),
            f"steady after {t.get('warmup_calls')} warm-up calls",
            gpu_only=True,
        )
        check(
            (t.get("warmup_calls") or 99) <= 10,
            f"the caching allocator settles within 10 calls: {t.get('warmup_last_ms')}",
            gpu_only=True,
        )
        check(
            (t.get("minor_faults_per_call") or 0) < 1,
            f"no page faults per timed call: {t.get('minor_faults_per_call')}",
            gpu_only=True,
        )
        opts = t.get("options") or {}
        check(
            opts.get("stat") == "median" and "l2_flush" in opts and "env" in opts,
            f"options recorded: {sorted(opts)}",
        )
        again = [timed(base, "kern.sm:bench") for _ in range(3)]
        meds = [a["gpuopt_value"] for a in again if a]
        if len(meds) == 3:
            spread = (max(meds) - min(meds)) / min(meds)
            print(f"  3 more processes: medians {', '.join(f'{x * 1e3:.1f}' for x in meds)} µs")
            check(spread < 0.05, f"CUDA-event medians agree across processes ({spread:.1%})",
                  gpu_only=True)  # fmt: skip
        tv = timed(new, "kern.sm:bench")
        if t and tv:
            print(
                f"  naive softmax {t['gpuopt_value'] * 1e3:.1f} µs, torch.softmax "
                f"{tv['gpuopt_value'] * 1e3:.1f} µs"
            )
        cold = timed(base, "kern.sm:small")
        warm = timed(base, "kern.sm:small", "--no-l2-flush")
        if cold and warm:
            ratio = cold["gpuopt_value"] / warm["gpuopt_value"]
            print(
                f"  small softmax (fits in L2): flushed {cold['gpuopt_value'] * 1e3:.1f} µs, "
                f"not flushed {warm['gpuopt_value'] * 1e3:.1f} µs, ratio {ratio:.2f}"
            )
            check(
                warm.get("l2_flush_bytes") == 0, "--no-l2-flush turns the flush off", gpu_only=True
            )
            check(ratio > 0.9, "a flushed call is not faster than a warm-L2 call", gpu_only=True)

        print("preloaded interpreter (torch imported once, each run forked)")
        import os
        import statistics

        from measure.preload import PreloadedPython

        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", GPUOPT_PRELOAD="1")
        args = harness.worker_script_args("time", "torch", "kern.sm:bench")
        spawned = [timed(base, "kern.sm:bench") for _ in range(3)]
        with PreloadedPython(sys.executable, ["torch"], env=env) as server:
            forked = [
                server.run(args, base, env=env, metric_source="json", metric_pattern="gpuopt_value")
                for _ in range(3)
            ]
        check(all(r.ok for r in forked), "forked runs initialise CUDA themselves and succeed")
        forked_data = [harness.parse_worker_output(r.stdout_tail) or {} for r in forked]
        check(
            all(str(d.get("device", "")).startswith("cuda") for d in forked_data),
            "forked runs time on the GPU",
            gpu_only=True,
        )
        if all(r.ok for r in forked) and all(spawned):
            f_med = statistics.median(r.value or 0 for r in forked)
            s_med = statistics.median(d["gpuopt_value"] for d in spawned)
            print(
                f"  naive softmax: spawned {s_med * 1e3:.1f} µs, forked {f_med * 1e3:.1f} µs; "
                f"wall per run: forked {statistics.median(r.wall_s for r in forked):.2f} s"
            )
            # On a CPU they need not: 16 MiB tensors fault more in a forked child (docs).
            check(
                0.8 < f_med / s_med < 1.25,
                "forked and spawned runs time alike (within 25%)",
                gpu_only=True,
            )

        print("audits (profiler and CUDA memory statistics)")
        jobs = [
            {"name": "sm", "mode": "audit", "kind": "torch", "spec": "kern.sm:bench"},
            {"name": "mlp", "mode": "audit", "kind": "torch", "spec": "kern.mlp:bench"},
            {
                "name": "mlp-train",
                "mode": "audit",
                "kind": "torch",
                "spec": "kern.mlp:bench",
                "training": True,
            },
        ]
        b = {j["name"]: r for j, r in zip(jobs, harness.run_jobs(jobs, base), strict=True)}
        v = {j["name"]: r for j, r in zip(jobs[:1], harness.run_jobs(jobs[:1], new), strict=True)}
        for label, r in [*b.items(), ("sm (variant)", v["sm"])]:
            d = r.data
            print(
                f"  {label}: kernels {d.get('kernel_launches')}, memcpy/memset "
                f"{d.get('memcpy_memset')}, operators {d.get('operator_count')}, allocations "
                f"{d.get('allocation_count')}, peak {d.get('peak_bytes')} B "
                f"{r.error}"
            )
            ops = ", ".join(f"{o['name'][:50]}×{o['count']}" for o in d.get("top_ops", [])[:6])
            print(f"    {ops}")
        sm_b, sm_v = b["sm"].data, v["sm"].data
        check(b["sm"].ok and v["sm"].ok, "audits ran")
        check(
            (sm_b.get("kernel_launches") or 0) >= 4,
            "naive softmax launches ≥ 4 kernels",
            gpu_only=True,
        )
        check(sm_v.get("kernel_launches") == 1, "torch.softmax launches 1 kernel", gpu_only=True)
        check((sm_b.get("allocation_count") or 0) >= 3, "naive softmax allocates ≥ 3 times")
        check((sm_b.get("peak_bytes") or 0) >= 2 * 4096 * 1024 * 4, "peak covers input + output")
        check(
            (sm_b.get("allocated_bytes") or 0) >= 4096 * 1024 * 4,
            f"bytes allocated per call: {sm_b.get('allocated_bytes')}",
        )
        train = b["mlp-train"].data
        check(
            (train.get("kernel_launches") or 0) > (b["mlp"].data.get("kernel_launches") or 0),
            "the training path launches more kernels than inference",
        )

        print("correctness on the GPU")
        ref = top / "ref.pt"
        r1 = harness.capture("torch", "kern.sm:bench", base, ref, trials=2)
        r2 = harness.capture(
            "torch", "kern.sm:bench", new, top / "new.pt", trials=2, compare_to=ref
        )
        check(r1.ok and r2.ok, f"captures ran {r1.error} {r2.error}")
        st = (r2.data.get("stats") or [{}])[0]
        print(
            f"  max abs {st.get('max_abs')}, ULP max {st.get('ulp_max')}, "
            f"p99 {st.get('ulp_p99')}, mismatches {st.get('mismatches')}"
        )
        check(bool(r2.data.get("passed")), "naive vs torch.softmax within float32 tolerance")
        check(
            str(r2.data.get("device", "")).startswith("cuda"), "compared on the GPU", gpu_only=True
        )
    failed = [w for ok, w in results if not ok]
    print(
        f"\n{len(results) - len(failed)}/{len(results)} checks passed "
        f"in {time.monotonic() - started:.0f} s"
    )
    for w in failed:
        print(f"FAILED: {w}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
