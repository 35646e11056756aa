"""Correctness and audits, each row labelled with its round: the checks, their error
statistics (NaN/Inf counted in the headline), what each check tried, the audits' figures."""

from __future__ import annotations

from collections.abc import Callable

from session.md import (
    md_cell,
    md_code,
    md_table,
    plain_value,
    round_label,
    section,
    words,
    yes,
)
from session.record.model import CheckRow, SessionExport
from session.record.rows import AuditRow
from session.verdicts import bytes_text, sci


def correctness_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Correctness")
    if not x.correctness:
        return [*lines, "No correctness results yet."]
    lines += md_table(
        ["round", "variant", "workload", "result", "exact", "trials", "seeds", "suggested class"],
        [
            [round_label(c.round), c.variant, c.workload,
             "passes" if c.passed else f"FAILED: {c.failure or 'check failed'}", yes(c.exact),
             c.trials, ", ".join(str(s) for s in c.seeds), c.suggested_class]
            for c in x.correctness
        ],
    )  # fmt: skip
    stats = [(c, st) for c in x.correctness for st in c.stats]
    if stats:
        lines += ["", "Error statistics (the headline counts NaN/Inf first):", ""]
        lines += md_table(
            ["round", "variant", "workload", "output", "headline", "mean abs",
             "ULP max / p50 / p99", "NaN ref→new", "Inf ref→new", "±0 diffs", "worst index"],
            [
                [round_label(c.round), c.variant, c.workload, st.output, st.headline,
                 sci(st.mean_abs), f"{sci(st.ulp_max)} / {sci(st.ulp_p50)} / {sci(st.ulp_p99)}",
                 f"{st.nan_ref}→{st.nan_new}", f"{st.inf_ref}→{st.inf_new}",
                 st.signed_zero_diffs, st.worst_index]
                for c, st in stats
            ],
        )  # fmt: skip
    for c in x.correctness:
        lines += _check_details(c)
    return lines


def _check_details(c: CheckRow) -> list[str]:
    """What one check did and did not try, what it warned of, and why it failed."""
    out: list[str] = []
    rows: list[list[object]] = [[words(k), v if isinstance(v, str) else plain_value(v)]
                             for k, v in c.options.items()]  # fmt: skip
    rows += [["warning", w] for w in c.warnings]
    for s in c.stress:
        rows.append([f"stress {s.kind or None}", "passes" if s.passed else
                     f"FAILED: {s.mismatches} mismatched, NaN {s.nan_ref}→{s.nan_new}, "
                     f"Inf {s.inf_ref}→{s.inf_new}"])  # fmt: skip
    for side in ("baseline", "variant"):
        if c.nondeterminism.get(side):
            rows.append([f"nondeterministic ({side})", plain_value(c.nondeterminism[side])])
    if c.class_reason:
        rows.append(["class reason", c.class_reason])
    who = f"{md_cell(c.variant)}/{md_cell(c.workload)} ({round_label(c.round)})"
    if rows:
        out += ["", f"Check of {who}:", ""]
        out += md_table(["what", "value"], rows)
    if c.error:
        out += ["", f"{who} failed:", ""]
        out += md_code(c.error.splitlines())
    return out


def audits_lines(x: SessionExport) -> list[str]:
    lines: list[str] = []
    section(lines, "Audits")
    if not x.audits:
        return [*lines, "No audits recorded."]
    base: dict[tuple[int | None, str], AuditRow] = {
        (a.round, a.workload): a for a in x.audits if a.arm_id == "baseline"
    }
    lines += md_table(
        ["round", "arm", "workload", "device", "dtype", "kernel launches", "operators",
         "allocations", "peak"],
        [
            [round_label(a.round), a.arm, a.workload, a.device, a.dtype,
             *(_delta(a, base.get((a.round, a.workload)), k, f)
               for k, f in (("kernel_launches", None), ("operator_count", None),
                            ("allocation_count", None), ("peak_bytes", bytes_text)))]
            for a in x.audits
        ],
    )  # fmt: skip
    return lines


def _delta(
    a: AuditRow, base: AuditRow | None, key: str, fmt: Callable[[int], str] | None = None
) -> str:
    def show(v: int | None) -> str:
        return "—" if v is None else (fmt(v) if fmt else str(v))

    value, before = getattr(a, key), getattr(base, key, None)
    if base is None or a.arm_id == "baseline" or value is None or before is None:
        return show(value)
    return f"{show(before)} → {show(value)}"
