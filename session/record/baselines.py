"""The baseline the rounds rest on, earlier attempts one line each, and the environment
once (then only what changed from one baseline to the next)."""

from __future__ import annotations

import re

from session.md import md_cell, md_code, md_table, section, words, yes
from session.record.model import SessionExport
from session.record.rows import BaselineRow, EnvironmentRow


def _env_rows(env: EnvironmentRow) -> list[list[str]]:
    gpus = "; ".join(
        f"{g.name or '?'} (driver {g.driver or '?'}, "
        f"max SM {g.max_sm_clock_mhz or '?'} MHz, MIG {yes(g.mig_mode)})"
        for g in env.gpus
    )
    return [
        ["GPU", gpus or env.gpu_note or "none"],
        ["CUDA runtime / nvcc", f"{env.cuda_runtime or '—'} / {env.nvcc or '—'}"],
        ["torch (CUDA)", f"{env.torch or '—'} ({env.torch_cuda or '—'})"],
        ["Python", env.python],
        ["OS / kernel", f"{env.os or '—'} / {env.kernel or '—'}"],
        ["CPU", f"{env.cpu_model or '—'} × {env.cpu_count or '?'}"],
        ["host", env.hostname],
        ["variables", ", ".join(f"{k}={v}" for k, v in sorted(env.variables.items()))],
    ]


def said_once(outcome: str, detail: str) -> str:
    """A baseline's outcome words and its stored detail, the outcome said once: the
    detail opens with it and each workload's part repeats it ("too noisy for ±2%; w: too
    noisy for ±2% after 12 runs" reads "too noisy for ±2%; w: after 12 runs")."""
    outcome, detail = outcome.strip(), detail.strip()
    if not outcome:
        return detail
    if detail.startswith(outcome):
        detail = detail[len(outcome) :].lstrip(" ;:")
    detail = re.sub(rf"(^|; )([^;:]+): {re.escape(outcome)}(?: |(?=;)|$)", r"\1\2: ", detail)
    return f"{outcome}; {detail}" if detail else outcome


def _reproducibility(b: BaselineRow) -> str:
    word, detail = words(b.reproducibility), b.reproducibility_detail.strip()
    if detail.startswith(word):  # the detail already says it
        return detail
    return f"{word}: {detail}" if detail else word


def baseline_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Baseline")
    if not x.baselines:
        return [*lines, "No baseline recorded yet."]
    main_id = x.summary.baseline_id or x.baselines[-1].baseline_id
    b = next((b for b in x.baselines if b.baseline_id == main_id), x.baselines[-1])
    rows: list[list[object]] = [
        ["Baseline ID", b.baseline_id],
        ["snapshot", f"{b.snapshot.commit} ({b.snapshot.ref})"],
        ["uncommitted changes included", yes(b.snapshot.dirty)],
        ["reproducibility", _reproducibility(b)],
        ["reference medians", ", ".join(f"{k} {v:.6g}" for k, v in b.reference.items())],
        ["runs per workload", b.runs_per_workload],
        ["recorded", b.created_at],
    ]
    lines += md_table(["field", "value"], rows)
    if b.reset_procedure:
        lines += ["", "Reset / restore procedure:", ""]
        lines += md_code(b.reset_procedure.splitlines())
    others = [o for o in x.baselines if o is not b]
    if others:
        lines += ["", "Other baseline attempts:", ""]
        for o in others:
            lines.append(
                f"- {md_cell(o.baseline_id)} ({md_cell(o.created_at)}, commit "
                f"{md_cell(o.snapshot.commit[:12])}): {md_cell(_reproducibility(o))}"
            )
    section(lines, "Environment", 3)
    # The environment of the baseline the record rests on; other attempts by what differs.
    lines.append(f"As recorded with baseline {md_cell(b.baseline_id)}:")
    lines.append("")
    ours = _env_rows(b.environment)
    lines += md_table(["field", "value"], ours)
    for o in others:
        theirs = _env_rows(o.environment)
        changed = [[n[0], n[1], a[1]] for a, n in zip(ours, theirs, strict=True)
                   if a[1] != n[1]]  # fmt: skip
        if changed:
            lines += ["", f"Baseline {md_cell(o.baseline_id)} differed:", ""]
            lines += md_table(["field", "that baseline", "this one"], changed)
    return lines
