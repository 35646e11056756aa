"""`gpuopt profile`: the profile pass of one arm's workloads, stored as evidence.

A pass of its own, apart from timing (profiling distorts timing): for each torch or
KernelBench workload the worker runs torch.profiler on a few steps in the arm's worktree and
reports the operator (and, on a GPU, kernel) table, the launches per step, the intermediate
tensors, write/read pairs, FLOPs and bytes, and this machine's measured ceilings. Here that
becomes one Evidence row per workload (kind torch_profile, summary["source"] PROFILE_SOURCE)
with the roofline position and the suggested class added; the Chrome trace is kept beside
the ledger, in `<ledger>.artifacts/<session>/profiles/`. torch is never imported here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from measure import harness
from measure.profiling import ceilings, nsys, roofline
from measure.worktrees import worktree
from session import evidence
from session import models as m
from session.check_words import Floor, floors_of
from session.profile.base import (
    BASELINE,
    PROFILE_SOURCE,
    ProfileError,
    ProfileRun,
    newest_profiles,
    slug,
    traces_dir,
)
from session.profile.base import (
    is_profile as is_profile,  # its callers' old home
)
from session.profile.shell import profile_shell

DEFAULT_STEPS = 3
_TORCH_KINDS = (m.WorkloadKind.TORCH, m.WorkloadKind.KERNELBENCH)


def open_hint(trace: str | Path) -> str:
    """How a person opens a Chrome/Perfetto trace."""
    return (
        f"open {trace} in https://ui.perfetto.dev (Open trace file) or chrome://tracing; "
        "it stays on this machine"
    )


def arm_target(ledger: Any, session: m.Session, arm: str) -> tuple[str, str, m.Variant | None]:
    """(arm key, commit, variant) for "baseline" or a variant's name or id."""
    if arm == BASELINE:
        baseline = ledger.latest_baseline(session.id)
        if baseline is None:
            raise ProfileError("no baseline recorded yet: run `gpuopt baseline SESSION` first")
        return BASELINE, baseline.snapshot.commit, None
    try:
        variant = ledger.variant(session.id, arm)
    except Exception as exc:  # the ledger's own lookup error, in its words
        raise ProfileError(str(exc).splitlines()[0] if str(exc) else f"no variant {arm}") from None
    return variant.id, variant.snapshot.commit, variant


def profiled_workloads(session: m.Session, name: str | None = None) -> list[m.Workload]:
    every = list(session.contract.workloads)
    if name is not None:
        every = [w for w in every if w.name == name]
        if not every:
            known = ", ".join(w.name for w in session.contract.workloads)
            raise ProfileError(f"no workload {name!r} in the contract (it has: {known})")
    return every


def summarize(data: dict[str, Any], arm: str, workload: str) -> dict[str, Any]:
    """The worker's profile with the roofline position and the suggested class added."""
    summary = {k: v for k, v in data.items() if k not in ("traceback", "gpuopt_worker", "mode")}
    summary.update(source=PROFILE_SOURCE, arm=arm, workload=workload)
    work = data.get("work") or {}
    step_ms = data.get("step_ms")
    part = ceilings.part_for(str(data.get("device_name") or ""))
    dtype = str(data.get("dtype") or "float32")
    pos = roofline.position(
        step_s=float(step_ms) / 1e3 if step_ms else None,
        flops=work.get("flops"),
        nbytes=work.get("bytes"),
        launches=data.get("launches"),
        ceilings=roofline.measured(data.get("probe")),
        table=roofline.vendor(part, dtype),
    )
    summary["roofline"] = pos.as_dict()
    summary["part"] = part.name if part else None
    return summary


def _jobs(
    workloads: Sequence[m.Workload], folder: Path, arm: str, steps: int
) -> list[dict[str, Any]]:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return [
        {
            "name": w.name,
            "mode": "profile",
            "kind": w.kind.value,
            "spec": w.command,
            "training": w.training,
            "steps": steps,
            "trace": str(folder / f"{slug(arm)}-{slug(w.name)}-{stamp}.trace.json"),
        }
        for w in workloads
    ]


Progress = Callable[[str], None]


def profile_tree(
    ledger: Any,
    session: m.Session,
    arm: str,
    tree: Path,
    workloads: Sequence[m.Workload],
    *,
    variant: m.Variant | None = None,
    steps: int = DEFAULT_STEPS,
    progress: Progress | None = None,
) -> list[ProfileRun]:
    """Profile torch workloads in a checkout already made (a worktree); store the evidence."""

    folder = traces_dir(ledger, session)
    folder.mkdir(parents=True, exist_ok=True)
    c = session.contract
    runs: list[ProfileRun] = []
    groups: dict[tuple[tuple[str, str], ...], list[m.Workload]] = {}
    for w in workloads:
        groups.setdefault(tuple(sorted(w.env.items())), []).append(w)
    for group in groups.values():
        if progress:
            progress(
                f"profiling {', '.join(w.name for w in group)} ({variant.name if variant else arm})"
            )
        jobs = _jobs(group, folder, arm, steps)
        results = harness.run_jobs(
            jobs,
            tree,
            python=c.python,
            env=group[0].env,
            timeout_s=c.timeout_s,
            launcher=c.launcher,
        )
        for w, r in zip(group, results, strict=True):
            if not r.ok:
                runs.append(ProfileRun(w.name, arm, error=r.error or "the profile failed",
                                       output_tail=r.output_tail))  # fmt: skip
                continue
            summary = summarize(r.data, arm, w.name)
            figure = round_figure(ledger, session, arm, w.name)
            if figure is not None:
                summary["round_ms"] = figure
            trace = summary.get("trace")
            ev = evidence.add_profile(
                ledger,
                session,
                summary,
                title=f"profile of {w.name} ({variant.name if variant else 'baseline'})",
                path=str(trace) if trace else None,
                variant_id=variant.id if variant else None,
            )
            runs.append(ProfileRun(w.name, arm, evidence=ev))
    return runs


def round_figure(ledger: Any, session: m.Session, arm: str, workload: str) -> float | None:
    """The measured time per call of an arm's workload: the median of its latest runs
    (a round's, else the baseline's), for the profile's "rough" warning."""
    import statistics

    runs = [
        r.value
        for r in ledger.list(m.Run, session_id=session.id)
        if r.arm == arm and r.workload == workload and not r.warmup
        and r.status is m.RunStatus.OK and r.value
    ]  # fmt: skip
    return float(statistics.median(runs[-30:])) if runs else None


def profile_arm(
    ledger: Any,
    session: m.Session,
    arm: str = BASELINE,
    workload: str | None = None,
    *,
    steps: int = DEFAULT_STEPS,
    progress: Progress | None = None,
) -> tuple[list[ProfileRun], list[m.Workload]]:
    """Profile an arm's workloads in a worktree of its snapshot (torch ones with the worker,
    shell ones under Nsight when nsys or ncu is on PATH); store and return the runs, and the
    shell workloads left unprofiled (no Nsight tool here)."""

    key, commit, variant = arm_target(ledger, session, arm)
    chosen = profiled_workloads(session, workload)
    torch_ones = [w for w in chosen if w.kind in _TORCH_KINDS]
    others = [w for w in chosen if w.kind not in _TORCH_KINDS]
    nsight = bool(others) and any(nsys.tools().values())
    if not torch_ones and not nsight:
        return [], others
    runs: list[ProfileRun] = []
    with worktree(session.repo, commit, "profile") as tree:
        if torch_ones:
            runs += profile_tree(
                ledger, session, key, Path(tree), torch_ones, variant=variant, steps=steps,
                progress=progress,
            )  # fmt: skip
        if nsight:
            if progress:
                progress(f"profiling {', '.join(w.name for w in others)} under Nsight")
            runs += profile_shell(ledger, session, key, Path(tree), others, variant=variant)
    return runs, [] if nsight else others


def latest_profiles(ledger: Any, session_id: str, arm: str) -> dict[str, m.Evidence]:
    """The newest profile of each workload for one arm ("baseline" or a variant id), read
    from the ledger (a view has them: `newest_profiles(view.evidence, arm)`)."""
    rows = ledger.list(m.Evidence, session_id=session_id, order_by="created_at, rowid")
    return newest_profiles(rows, arm)


def baseline_floors(ledger: Any, session_id: str) -> dict[str, Floor]:
    """Per workload, the roofline floor of the baseline's newest profile, read from the
    ledger (a view has them: `SessionView.floors`)."""
    return floors_of(latest_profiles(ledger, session_id, BASELINE))


def shell_advice(others: Sequence[m.Workload]) -> list[str]:
    """What to do for shell workloads this pass did not profile: the Nsight commands when
    nsys or ncu is on PATH, else what is missing and how to attach a profile by hand."""
    if not others:
        return []
    if not any(nsys.tools().values()):
        return [f"{', '.join(w.name for w in others)}: shell workload(s): {nsys.MISSING}"]
    out = []
    for w in others:
        out.append(f"{w.name}: to profile this shell workload under Nsight, run:")
        out += [f"  {cmd}" for cmd in nsys.profile_commands(w.command, f"{slug(w.name)}-profile")]
        out.append(f"  {nsys.ncu_command(w.command)}")
        out.append("  then attach the output with `gpuopt evidence add SESSION --ncu-csv FILE`")
    return out
