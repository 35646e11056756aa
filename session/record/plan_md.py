"""The measurement plan in markdown: per figure its snapshot refs and a pasteable block."""

from __future__ import annotations

from session.md import md_cell, md_code, md_table, section
from session.record.model import SessionExport


def plan_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Measurement plan")
    if not x.measurement_plan:
        return [*lines, "Nothing measured yet."]
    lines.append(
        "Each block checks its snapshots out in new temporary folders and can be pasted "
        "as it is; add --ledger PATH to gpuopt when the session's ledger is not the default."
    )
    for i, item in enumerate(x.measurement_plan, 1):
        section(lines, f"{i}. {md_cell(item.figure)}", 3)
        if item.refs:
            lines += md_table(["snapshot refs"], [[ref] for ref in item.refs])
            lines.append("")
        lines += md_code(item.commands)
        if item.note:
            lines += ["", md_cell(item.note)]
    return lines
