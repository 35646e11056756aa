"""Shell workloads under Nsight: `nsys profile` with `nsys stats` for the kernel and memory
summaries, and `ncu --csv --page raw` on the first kernels with their throughput metrics,
imported as the same evidence a torch workload's profile gives (kernel table, launches,
dominant kernel). Run only when the tools are on PATH; otherwise session.profile.run.shell_advice
says what is missing."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from measure.profiling import nsys
from measure.runner import run_command
from session import evidence
from session import models as m
from session.evidence import EvidenceError, parse_ncu_csv
from session.profile.base import PROFILE_SOURCE, ProfileRun, slug, traces_dir


def _run(session: m.Session, w: m.Workload, command: str, tree: Path) -> str:
    """Run one command; "" when it succeeded, else why not in one line."""
    c = session.contract
    res = run_command(
        command, tree, env=w.env, timeout_s=c.timeout_s, launcher=c.launcher, kill_leftovers=True
    )
    if res.ok:
        return ""
    tail = (res.stderr_tail or res.stdout_tail).strip().splitlines()
    return res.error or f"exit {res.exit_code}" + (f": {tail[-1][:300]}" if tail else "")


def profile_shell(
    ledger: Any,
    session: m.Session,
    arm: str,
    tree: Path,
    workloads: Sequence[m.Workload],
    *,
    variant: m.Variant | None = None,
) -> list[ProfileRun]:
    """Profile shell workloads with the Nsight tools on PATH; store one evidence row each."""

    found = nsys.tools()
    folder = traces_dir(ledger, session)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    runs: list[ProfileRun] = []
    for w in workloads:
        base = folder / f"{slug(arm)}-{slug(w.name)}-{stamp}"
        summary: dict[str, Any] = {
            "profile_version": 1, "source": PROFILE_SOURCE, "arm": arm, "workload": w.name,
            "device": "cuda", "notes": [], "per_step": False,
        }  # fmt: skip
        errors: list[str] = []
        path: str | None = None
        if found["nsys"]:
            record, stats = nsys.profile_commands(w.command, str(base))
            csv_path = base.with_suffix(".stats.csv")
            why = _run(session, w, record, tree) or _run(session, w, f"{stats} > {csv_path}", tree)
            if why:
                errors.append(f"nsys: {why}")
            else:
                try:
                    summary.update(nsys.parse_stats(csv_path.read_text(errors="replace")))
                    summary["launch_source"] = "CUDA kernels of the whole run (nsys stats)"
                    summary["tool"] = "nsys"
                    path = str(base) + ".nsys-rep"
                except (OSError, nsys.NsysError) as exc:
                    errors.append(f"nsys: {exc}")
        if found["ncu"]:
            out = base.with_suffix(".ncu.csv")
            top = [k["name"] for k in summary.get("kernels", [])[:3]]  # nsys's, when it ran
            why = _run(session, w, f"{nsys.ncu_command(w.command, names=top)} > {out}", tree)
            if why:
                errors.append(f"ncu: {why}")
            else:
                try:
                    summary["ncu"] = parse_ncu_csv(out.read_text(errors="replace"))
                    path = path or str(out)
                except (OSError, EvidenceError) as exc:
                    errors.append(f"ncu: {exc}")
        if "tool" not in summary and "ncu" in summary:  # kernels from ncu alone
            tops = summary["ncu"]["top_kernels"]
            summary.update(
                tool="ncu",
                launches=summary["ncu"]["kernel_rows"],
                launch_source="kernels ncu profiled (its --launch-count)",
                kernels=[
                    {
                        "name": k["name"],
                        "calls": k["launches"],
                        "self_us": k["time_us"],
                        "share": k["share"],
                    }
                    for k in tops
                ],
                dominant={"name": tops[0]["name"], "share": tops[0]["share"]} if tops else None,
            )
        if "tool" not in summary:
            runs.append(ProfileRun(w.name, arm, error="; ".join(errors) or nsys.MISSING))
            continue
        summary["notes"] += errors
        ev = evidence.add_profile(
            ledger, session, summary,
            title=f"Nsight profile of {w.name} ({variant.name if variant else 'baseline'})",
            path=path, variant_id=variant.id if variant else None,
        )  # fmt: skip
        runs.append(ProfileRun(w.name, arm, evidence=ev))
    return runs
