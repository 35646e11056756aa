"""The decision record: everything a session decided, as JSON and as markdown.

`build_export` gathers the ledger's rows for one session into a plain dict (the JSON
format "gpuopt-session", documented in the README); `to_markdown` renders that dict.
"""

from __future__ import annotations

import json
from typing import Any

from session import models as m

FORMAT = "gpuopt-session"
FORMAT_VERSION = 1


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json")  # type: ignore[no-any-return]


def build_export(ledger: Any, session: m.Session) -> dict[str, Any]:
    sid = session.id
    variants = ledger.list(m.Variant, session_id=sid)
    names = {v.id: v.name for v in variants}
    rounds = ledger.list(m.Round, session_id=sid, order_by="number, rowid")
    baselines = ledger.list(m.Baseline, session_id=sid, order_by="created_at, rowid")
    hypotheses = ledger.list(m.Hypothesis, session_id=sid, order_by="created_at, rowid")
    contract = session.contract
    data: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "session": {
            "id": sid,
            "title": session.title,
            "repo": session.repo,
            "created_at": session.created_at.isoformat(),
            "metric": contract.metric.name,
            "metric_source": contract.metric.source.value,
            "metric_pattern": contract.metric.pattern,
            "direction": contract.metric.direction.value,
            "unit": contract.metric.unit,
            "threshold": contract.threshold,
            "check": contract.check,
            "hooks": _dump(contract.hooks),
            "launcher": contract.launcher,
            "timeout_s": contract.timeout_s,
            "bottleneck": session.bottleneck.value,
            "bottleneck_evidence": session.bottleneck_evidence,
        },
        "workloads": [_dump(w) for w in contract.workloads],
        "baselines": [
            {
                "baseline_id": b.id,
                "snapshot": {
                    "commit": b.snapshot.commit,
                    "ref": b.snapshot.ref,
                    "dirty": b.snapshot.dirty,
                    "head": b.snapshot.head,
                    "warnings": b.snapshot.warnings,
                },
                "environment": _dump(b.environment),
                "reproducible": b.reproducibility is m.Reproducibility.REPRODUCIBLE,
                "reproducibility": b.reproducibility.value,
                "reproducibility_detail": b.reproducibility_detail,
                "reference": b.reference,
                "runs_per_workload": b.runs_per_workload,
                "reset_procedure": b.reset_procedure,
                "created_at": b.created_at.isoformat(),
            }
            for b in baselines
        ],
        "preflight": [
            _dump(p) for p in ledger.list(m.PreflightAnswer, session_id=sid, order_by="rowid")
        ],
        "checklist": ledger.query(
            "SELECT number, done, note FROM checklist WHERE session_id = ? ORDER BY number",
            (sid,),
        ),
        "hypotheses": [
            {
                **_dump(h),
                "history": [
                    _dump(e)
                    for e in ledger.list(m.HypothesisEvent, hypothesis_id=h.id, order_by="at, rowid")
                ],
            }
            for h in hypotheses
        ],
        "evidence": [_dump(e) for e in ledger.list(m.Evidence, session_id=sid)],
        "variants": [
            {
                "id": v.id,
                "name": v.name,
                "hypothesis_id": v.hypothesis_id,
                "snapshot": {"commit": v.snapshot.commit, "ref": v.snapshot.ref, "dirty": v.snapshot.dirty},
                "probe": v.probe,
                "source": v.source,
                "diff_stat": v.diff_stat,
            }
            for v in variants
        ],
        "rounds": [
            {
                "id": r.id,
                "number": r.number,
                "baseline_id": r.baseline_id,
                "status": r.status.value,
                "blocks": r.blocks,
                "seed": r.seed,
                "threshold": r.threshold,
                "baseline_check": r.baseline_check,
                "baseline_reproduced": r.baseline_reproduced,
                "summary": r.summary,
                "started_at": r.started_at.isoformat(),
                "ended_at": r.ended_at.isoformat() if r.ended_at else None,
                "comparisons": [
                    {
                        "variant": names.get(c.variant_id, c.variant_id),
                        "variant_id": c.variant_id,
                        "workload": c.workload,
                        "ratio": c.ratio,
                        "ci_low": c.ci_low,
                        "ci_high": c.ci_high,
                        "verdict": c.verdict.value,
                        "n": c.n,
                        "blocks_needed": c.blocks_needed,
                        "untrusted_runs": c.untrusted_runs,
                        "failed_runs": c.failed_runs,
                    }
                    for c in ledger.list(m.Comparison, round_id=r.id)
                ],
                "runs": _run_counts(ledger, r.id),
            }
            for r in rounds
        ],
        "correctness": [
            {
                "variant": names.get(c.variant_id, c.variant_id),
                "workload": c.workload,
                "passed": c.passed,
                "exact": c.exact,
                "trials": c.trials,
                "seeds": c.seeds,
                "suggested_class": c.suggested_class.value if c.suggested_class else None,
                "stats": [_dump(s) for s in c.stats],
            }
            for c in ledger.list(m.CorrectnessResult, session_id=sid)
        ],
        "audits": [
            {**_dump(a), "arm": names.get(a.arm, a.arm)}
            for a in ledger.list(m.Audit, session_id=sid)
        ],
        "residuals": [
            {**_dump(r), "variant": names.get(r.variant_id, r.variant_id)}
            for r in ledger.list(m.Residual, session_id=sid)
        ],
        "dispositions": [
            {
                "variant": names.get(d.variant_id, d.variant_id),
                "choice": d.choice.value,
                "class": d.optimization_class.value if d.optimization_class else None,
                "accepted_semantics": d.accepted_semantics,
                "guards": d.guards,
                "fallback": d.fallback,
                "failure_cases": d.failure_cases,
                "remaining_bottlenecks": d.remaining_bottlenecks,
                "reason": d.reason,
                "reopen_when": d.reopen_when,
                "created_at": d.created_at.isoformat(),
            }
            for d in ledger.list(m.Disposition, session_id=sid, order_by="created_at, rowid")
        ],
    }
    return data


def _run_counts(ledger: Any, round_id: str) -> dict[str, int]:
    rows = ledger.query(
        "SELECT status, trust, COUNT(*) AS n FROM runs WHERE round_id = ? GROUP BY status, trust",
        (round_id,),
    )
    counts: dict[str, int] = {"total": 0}
    for r in rows:
        counts["total"] += r["n"]
        counts[r["status"]] = counts.get(r["status"], 0) + r["n"]
        counts[f"trust_{r['trust']}"] = counts.get(f"trust_{r['trust']}", 0) + r["n"]
    return counts


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n"


# ---------------------------------------------------------------------------- markdown


def md_cell(value: Any) -> str:
    """Text a person typed, made safe for one markdown table cell."""
    text = "—" if value is None or value == "" else str(value)
    text = (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "&#124;")
        .replace("`", "&#96;")
        .replace("\\", "&#92;")
    )
    return " ".join(text.replace("\r", "\n").split("\n")).replace("  ", " &nbsp;")


def md_text(value: Any) -> str:
    """Free text as a markdown paragraph: HTML and markup characters escaped."""
    text = "" if value is None else str(value)
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "&#96;")
    )


def md_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |"]
    out.append("|" + "|".join(" --- " for _ in headers) + "|")
    for row in rows:
        out.append("| " + " | ".join(md_cell(c) for c in row) + " |")
    return out


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def to_markdown(data: dict[str, Any]) -> str:
    s = data["session"]
    lines: list[str] = [f"# Decision record: {md_cell(s['title'])}", ""]
    lines += md_table(
        ["field", "value"],
        [
            ["session", s["id"]],
            ["repository", s["repo"]],
            ["target metric", f"{s['metric']} ({s['unit'] or 'no unit'}), {s['direction']} is better"],
            ["noise threshold", f"±{s['threshold'] * 100:.1f}%"],
            ["correctness check", s["check"]],
        ],
    )
    lines += ["", "## Workloads", ""]
    lines += md_table(
        ["name", "kind", "scope", "command"],
        [[w["name"], w["kind"], w["scope"], w["command"]] for w in data["workloads"]],
    )
    lines += ["", "## Baselines", ""]
    if data["baselines"]:
        lines += md_table(
            ["Baseline ID", "snapshot", "dirty", "reproducible", "reference"],
            [
                [
                    b["baseline_id"],
                    b["snapshot"]["commit"][:12],
                    "yes" if b["snapshot"]["dirty"] else "no",
                    b["reproducibility"],
                    ", ".join(f"{k}={v:.6g}" for k, v in b["reference"].items()),
                ]
                for b in data["baselines"]
            ],
        )
    else:
        lines.append("No baseline recorded yet.")
    lines += ["", "## Hypotheses", ""]
    if data["hypotheses"]:
        lines += md_table(
            ["id", "title", "status", "confidence", "mechanism"],
            [[h["id"], h["title"], h["status"], h["confidence"], h["mechanism"]] for h in data["hypotheses"]],
        )
    else:
        lines.append("No hypotheses recorded.")
    lines += ["", "## Rounds", ""]
    for r in data["rounds"]:
        lines.append(
            f"### Round {r['number']} ({md_cell(r['status'])}, {r['blocks']} blocks, "
            f"baseline {md_cell(r['baseline_id'])})"
        )
        lines.append("")
        lines += md_table(
            ["variant", "workload", "ratio", "95% CI", "verdict", "n"],
            [
                [
                    c["variant"],
                    c["workload"],
                    _fmt(c["ratio"]),
                    f"[{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]",
                    c["verdict"],
                    c["n"],
                ]
                for c in r["comparisons"]
            ],
        )
        lines.append("")
    if not data["rounds"]:
        lines.append("No rounds run yet.")
    lines += ["", "## Dispositions", ""]
    if data["dispositions"]:
        lines += md_table(
            ["variant", "choice", "class", "guards", "fallback", "reopen when"],
            [
                [d["variant"], d["choice"], d["class"], "; ".join(d["guards"]), d["fallback"], d["reopen_when"]]
                for d in data["dispositions"]
            ],
        )
    else:
        lines.append("No dispositions recorded.")
    return "\n".join(lines).rstrip() + "\n"
