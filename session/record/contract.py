"""The contract: the session's target metric, its checks and hooks, the workloads, the steps."""

from __future__ import annotations

from session.md import join, md_table, section, words, yes
from session.record.model import SessionExport
from session.record.rows import StepRow
from session.timing import TORCH_KINDS
from session.torch_checks import HARNESS_CHECK


def _checks(command: str | None, x: SessionExport) -> str:
    """Every check a round runs: the contract's command, and the torch harness's own."""
    torch = [w.name for w in x.workloads if w.kind in TORCH_KINDS]
    parts = [command or ""]
    if torch:
        parts.append(f"{', '.join(torch)}: {HARNESS_CHECK}")
    return "; ".join(p for p in parts if p) or "none: variants are compared on speed only"


def contract_lines(x: SessionExport) -> list[str]:
    s = x.session
    hooks = s.hooks
    plain = f"{s.metric} ({s.unit or 'no unit'})"
    figures = {k: v for k, v in s.metrics.items() if v != plain}
    lines: list[str] = []
    section(lines, "Contract")
    lines += md_table(
        ["field", "value"],
        [
            ["session", s.id],
            ["repository", s.repo],
            ["created", s.created_at],
            ["target metric", f"{plain}, {s.direction} is better"],
            ["metric source", f"{words(s.metric_source)} {s.metric_pattern or ''}"],
            *(
                [["figure per workload", join([f"{k}: {v}" for k, v in figures.items()])]]
                if figures
                else []
            ),
            ["noise threshold", f"±{s.threshold * 100:.1f}%"],
            ["correctness check", _checks(s.check, x)],
            [
                "setup / prepare / cleanup",
                " / ".join(h or "—" for h in (hooks.setup, hooks.prepare, hooks.cleanup)),
            ],
            ["launcher", s.launcher],
            ["timeout per run", f"{s.timeout_s:g} s"],
        ],
    )
    section(lines, "Workloads", 3)
    lines += md_table(
        ["name", "kind", "scope", "training", "command", "environment"],
        [
            [w.name, words(w.kind), words(w.scope), yes(w.training),
             w.command, ", ".join(f"{k}={v}" for k, v in sorted(w.env.items()))]
            for w in x.workloads
        ],
    )  # fmt: skip
    section(lines, "Steps", 3)
    lines += md_table(
        ["step", "state", "detail"],
        [[words(st.step), words(st.state), _step_detail(st, s.id)] for st in x.steps],
    )
    return lines


def _step_detail(step: StepRow, sid: str) -> str:
    # the step texts name the command with a placeholder: the record names this session
    return step.reason.replace("gpuopt export SESSION", f"gpuopt export {sid}")
