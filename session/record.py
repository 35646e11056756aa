"""The decision record: everything a session decided, as JSON and as markdown.

`build_export` gathers the ledger's rows for one session into a plain dict (the JSON
format "gpuopt-session", documented in the README); `to_markdown` renders that dict.
Later versions only add keys: the documented ones keep their meaning.

Every piece of text a person typed reaches the markdown through `md_cell` (one table cell:
newlines, pipes, backticks, backslashes and HTML escaped) or through a code fence longer
than any run of backticks inside it, so no input can break a table or the page.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from session import commands
from session import models as m
from session.timing import metric_text

FORMAT = "gpuopt-session"
FORMAT_VERSION = 1


def _dump(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json")
    return out


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


# ---------------------------------------------------------------------------- gathering


def build_export(ledger: Any, session: m.Session) -> dict[str, Any]:
    from session.preflight import CHECKLIST, QUESTIONS
    from session.preflight import checklist as checklist_items
    from session.residuals import DESCRIPTIONS as RESIDUAL_WORDS
    from session.residuals import draft_round_summary
    from session.steps import step_states

    sid = session.id
    session = ledger.get(m.Session, sid) or session
    variants = ledger.list(m.Variant, session_id=sid, order_by="created_at, rowid")
    names = {v.id: v.name for v in variants}
    rounds = ledger.list(m.Round, session_id=sid, order_by="number, rowid")
    baselines = ledger.list(m.Baseline, session_id=sid, order_by="created_at, rowid")
    hypotheses = ledger.list(m.Hypothesis, session_id=sid, order_by="created_at, rowid")
    contract = session.contract
    scopes = {w.name: w.scope.value for w in contract.workloads}
    answers = {p.question: p for p in ledger.list(m.PreflightAnswer, session_id=sid)}
    audits = ledger.list(m.Audit, session_id=sid, order_by="created_at, rowid")
    evidence = ledger.list(m.Evidence, session_id=sid, order_by="created_at, rowid")
    correctness = ledger.list(m.CorrectnessResult, session_id=sid, order_by="created_at, rowid")
    residuals = ledger.list(m.Residual, session_id=sid, order_by="created_at, rowid")
    dispositions = ledger.list(m.Disposition, session_id=sid, order_by="created_at, rowid")
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
            # What each workload's figure is (a torch workload's is ms per call, not the
            # contract's metric): session.timing.metric_text.
            "metrics": {w.name: metric_text(contract, w) for w in contract.workloads},
            "threshold": contract.threshold,
            "check": contract.check,
            "hooks": _dump(contract.hooks),
            "launcher": contract.launcher,
            "timeout_s": contract.timeout_s,
            "bottleneck": session.bottleneck.value,
            "bottleneck_evidence": session.bottleneck_evidence,
        },
        "contract": _dump(contract),
        "steps": [_dump(s) for s in step_states(ledger, session)],
        "workloads": [{**_dump(w), "metric": metric_text(contract, w)} for w in contract.workloads],
        "baselines": [
            {
                "baseline_id": b.id,
                "snapshot": {
                    "id": b.snapshot.id,
                    "commit": b.snapshot.commit,
                    "ref": b.snapshot.ref,
                    "dirty": b.snapshot.dirty,
                    "head": b.snapshot.head,
                    "warnings": b.snapshot.warnings,
                },
                "environment": _dump(b.environment),
                "contract_hash": b.contract_hash,
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
            {
                "session_id": sid,
                "question": q.value,
                "prompt": QUESTIONS[q],
                "kind": a.kind.value if a else m.PreflightAnswerKind.UNKNOWN.value,
                "text": a.text if a else "",
                "evidence_id": a.evidence_id if a else None,
                "concern_area": a.concern_area.value if a and a.concern_area else None,
                "answered": a is not None,
                "updated_at": _iso(a.updated_at) if a else None,
            }
            for q in m.PreflightQuestion
            for a in [answers.get(q)]
        ],
        "checklist": [
            {"number": c.number, "item": CHECKLIST[c.number], "done": c.done, "note": c.note}
            for c in checklist_items(ledger, session)
        ],
        "hypotheses": [
            {
                **_dump(h),
                "variants": [v.name for v in variants if v.hypothesis_id == h.id],
                "history": [
                    _dump(e)
                    for e in ledger.list(
                        m.HypothesisEvent, hypothesis_id=h.id, order_by="at, rowid"
                    )
                ],
            }
            for h in hypotheses
        ],
        "evidence": [_evidence_row(e, names) for e in evidence],
        "variants": [
            {
                "id": v.id,
                "name": v.name,
                "hypothesis_id": v.hypothesis_id,
                "snapshot": {
                    "commit": v.snapshot.commit,
                    "ref": v.snapshot.ref,
                    "dirty": v.snapshot.dirty,
                },
                "probe": v.probe,
                "kind": v.kind.value,
                "source": v.source,
                "diff_stat": v.diff_stat,
                "files_changed": v.files_changed,
                "created_at": v.created_at.isoformat(),
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
                "min_blocks": r.min_blocks,
                "max_blocks": r.max_blocks,
                "seed": r.seed,
                "threshold": r.threshold,
                "budget_s": r.budget_s,
                "variants": [names.get(v, v) for v in r.variant_ids],
                "baseline_check": r.baseline_check,
                "baseline_reproduced": r.baseline_reproduced,
                "summary": r.summary,
                "search_round": draft_round_summary(ledger, r),
                "started_at": r.started_at.isoformat(),
                "ended_at": r.ended_at.isoformat() if r.ended_at else None,
                "comparisons": [
                    {
                        "variant": names.get(c.variant_id, c.variant_id),
                        "variant_id": c.variant_id,
                        "workload": c.workload,
                        "scope": scopes.get(c.workload),
                        "ratio": c.ratio,
                        "ci_low": c.ci_low,
                        "ci_high": c.ci_high,
                        "verdict": c.verdict.value,
                        "n": c.n,
                        "blocks_needed": c.blocks_needed,
                        "untrusted_runs": c.untrusted_runs,
                        "failed_runs": c.failed_runs,
                        "error": c.error,
                        "note": c.note,
                        "trust": _trust_counts(ledger, r.id, c.variant_id, c.workload),
                    }
                    for c in ledger.list(m.Comparison, round_id=r.id)
                ],
                "runs": _run_counts(ledger, r.id),
            }
            for r in rounds
        ],
        "correctness": [
            {
                "id": c.id,
                "variant": names.get(c.variant_id, c.variant_id),
                "variant_id": c.variant_id,
                "workload": c.workload,
                "passed": c.passed,
                "exact": c.exact,
                "trials": c.trials,
                "seeds": c.seeds,
                "suggested_class": c.suggested_class.value if c.suggested_class else None,
                "exit_code": c.exit_code,
                "error": c.error,
                "warnings": c.warnings,
                "options": c.options,
                "stress": c.stress,
                "nondeterminism": c.nondeterminism,
                "class_reason": c.class_reason,
                "artifact_bytes": c.artifact_bytes,
                "stats": [_dump(s) for s in c.stats],
                "created_at": c.created_at.isoformat(),
            }
            for c in correctness
        ],
        "audits": [{**_dump(a), "arm": names.get(a.arm, a.arm), "arm_id": a.arm} for a in audits],
        "residuals": [
            {
                **_dump(r),
                "variant": names.get(r.variant_id, r.variant_id),
                "description": RESIDUAL_WORDS[r.confirmed or r.suggested],
            }
            for r in residuals
        ],
        "dispositions": [
            {
                "id": d.id,
                "variant": names.get(d.variant_id, d.variant_id),
                "variant_id": d.variant_id,
                "choice": d.choice.value,
                "class": d.optimization_class.value if d.optimization_class else None,
                "accepted_semantics": d.accepted_semantics,
                "guards": d.guards,
                "fallback": d.fallback,
                "failure_cases": d.failure_cases,
                "remaining_bottlenecks": d.remaining_bottlenecks,
                "reason": d.reason,
                "reopen_when": d.reopen_when,
                "open_questions": d.open_questions,
                "created_at": d.created_at.isoformat(),
            }
            for d in dispositions
        ],
    }
    data["measurement_plan"] = measurement_plan(session, baselines, variants, rounds, evidence)
    return data


def _evidence_row(e: m.Evidence, names: dict[str, str]) -> dict[str, Any]:
    from session.evidence import describe

    return {
        **_dump(e),
        "variant": names.get(e.variant_id, e.variant_id) if e.variant_id else None,
        "description": describe(e),
    }


def _trust_counts(ledger: Any, round_id: str, arm: str, workload: str) -> dict[str, int]:
    rows = ledger.query(
        "SELECT trust, COUNT(*) AS n FROM runs WHERE round_id = ? AND arm = ? AND workload = ? "
        "AND warmup = 0 GROUP BY trust ORDER BY trust",
        (round_id, arm, workload),
    )
    return {r["trust"]: r["n"] for r in rows}


def _run_counts(ledger: Any, round_id: str) -> dict[str, int]:
    rows = ledger.query(
        "SELECT status, trust, COUNT(*) AS n FROM runs WHERE round_id = ? GROUP BY status, trust "
        "ORDER BY status, trust",
        (round_id,),
    )
    counts: dict[str, int] = {"total": 0}
    for r in rows:
        counts["total"] += r["n"]
        counts[r["status"]] = counts.get(r["status"], 0) + r["n"]
        counts[f"trust_{r['trust']}"] = counts.get(f"trust_{r['trust']}", 0) + r["n"]
    return counts


# ---------------------------------------------------------------------------- measurement plan


def _q(text: str) -> str:
    return shlex.quote(text)


def _workload_line(w: m.Workload, contract: m.Contract) -> str:
    """The workload as gpuopt runs it: `[launcher] bash -c COMMAND` with its environment
    (printed bare when it has neither: the same in the person's shell)."""
    if w.kind is not m.WorkloadKind.COMMAND:
        return commands.comment(
            f"{w.name}: {w.kind.value} workload {w.command} (run by the gpuopt harness)"
        )
    pairs = sorted(w.env.items())
    if not pairs and not contract.launcher:
        return w.command
    if all(_is_name(k) for k, _ in pairs):
        env = [f"{k}={_q(v)}" for k, v in pairs]
    else:  # only `env` takes any name
        env = [commands.command("env", *(f"{k}={v}" for k, v in pairs))]
    launcher = [contract.launcher] if contract.launcher else []
    return " ".join([*env, *launcher, commands.command("bash", "-c", w.command)])


def _is_name(key: str) -> bool:
    """An environment variable name the shell accepts in `NAME=value command`."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) is not None


def measurement_plan(
    session: m.Session,
    baselines: list[m.Baseline],
    variants: list[m.Variant],
    rounds: list[m.Round],
    evidence: list[m.Evidence],
) -> list[dict[str, Any]]:
    """The exact commands and snapshot refs that reproduce every figure of the record.

    Contract commands are shell text and appear as written; every other value (paths,
    names, ids, refs) is quoted, so pasting a command runs that command and nothing else.
    """
    c = session.contract
    repo = session.repo
    subdir = commands.subdir_of(repo)
    sid = session.id
    names = {v.id: v.name for v in variants}
    by_id = {v.id: v for v in variants}
    plan: list[dict[str, Any]] = []
    for b in baselines:
        cmds = commands.checkout(repo, commands.scratch_dir(b.id), b.snapshot.commit, subdir)
        if c.hooks.setup:
            cmds.append(c.hooks.setup)
        if c.hooks.prepare:
            cmds.append(c.hooks.prepare)
        cmds += [_workload_line(w, c) for w in c.workloads]
        cmds.append(commands.gpuopt("baseline", sid, "--runs", str(b.runs_per_workload)))
        plan.append(
            {
                "figure": f"reference results of baseline {b.id}",
                "refs": [b.snapshot.ref, b.snapshot.commit],
                "commands": cmds,
                "note": f"{b.runs_per_workload} runs per workload, warm-up excluded; "
                f"metric: {c.metric.name} ({c.metric.source.value})",
            }
        )
    for r in rounds:
        vnames = [names.get(v, v) for v in r.variant_ids]
        cmds = [
            commands.checkout(repo, commands.scratch_dir(names[v]), by_id[v].snapshot.commit)[0]
            for v in r.variant_ids
            if v in by_id
        ]
        words = ["round", sid, "--variants", ",".join(vnames), "--min-blocks",
                 str(r.min_blocks), "--max-blocks", str(r.max_blocks),
                 "--threshold", f"{r.threshold:g}"]  # fmt: skip
        if r.budget_s:
            words += ["--budget", f"{r.budget_s:g}"]
        cmds.append(commands.gpuopt(*words))
        refs = [b.snapshot.ref for b in baselines if b.id == r.baseline_id]
        refs += [by_id[v].snapshot.ref for v in r.variant_ids if v in by_id]
        plan.append(
            {
                "figure": f"comparisons of round {r.number}",
                "refs": refs,
                "commands": cmds,
                "note": f"baseline {r.baseline_id}; blocks in a fresh random order per block "
                f"(seed {r.seed}); {r.blocks} blocks ran",
            }
        )
    if c.check:
        for v in variants:
            plan.append(
                {
                    "figure": f"correctness of {v.name}",
                    "refs": [v.snapshot.ref, v.snapshot.commit],
                    "commands": [
                        *commands.checkout(
                            repo, commands.scratch_dir(v.name), v.snapshot.commit, subdir
                        ),
                        c.check,
                    ],
                    "note": "exit status 0 passes",
                }
            )
    for e in evidence:
        if e.path:
            sha = str(e.summary.get("file", e.summary).get("sha256", ""))
            plan.append(
                {
                    "figure": f"evidence {e.id} ({e.kind.value})",
                    "refs": [],
                    "commands": [commands.command("sha256sum", e.path)],
                    "note": f"expect sha256 {sha}" if sha else "",
                }
            )
    return plan


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n"


# ---------------------------------------------------------------------------- markdown

# Characters a terminal or a code review acts on: C0 (tab and newline aside), DEL, C1, the
# line separators, bidi embeddings, overrides and isolates ("trojan source"), BOM.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(hit: re.Match[str]) -> str:
    code = ord(hit.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_controls(text: str) -> str:
    """Stored text with its control characters written as escapes (`\\x1b`): a reader
    sees what is there, and nothing acts on the terminal or the page that shows it."""
    return _CONTROL.sub(_visible, text)


def md_cell(value: Any) -> str:
    """Text a person typed, made safe for one markdown table cell (always one line)."""
    text = "—" if value is None or value == "" else str(value)
    text = " ".join(text.replace("\r\n", "\n").split("\n"))
    text = visible_controls(text.replace("\t", " "))
    text = (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "&#124;")
        .replace("`", "&#96;")
        .replace("\\", "&#92;")
        .replace("[", "&#91;")
        .replace("]", "&#93;")
    )
    text = text.replace("  ", " &nbsp;")
    if text.strip() == "":
        return "&nbsp;"
    return text


def md_text(value: Any) -> str:
    """Free text as a markdown paragraph: HTML and markup characters escaped."""
    text = "" if value is None else visible_controls(str(value))
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "&#96;")
    )


def md_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |"]
    out.append("|" + "|".join(" --- " for _ in headers) + "|")
    for row in rows:
        out.append("| " + " | ".join(md_cell(c) for c in row) + " |")
    return out


def md_code(lines: list[str]) -> list[str]:
    """A fenced code block that no backtick run inside it can close."""
    body = "\n".join(lines)
    body = " ".join(body.split("\r"))
    longest = max((len(x) for x in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "sh", *body.split("\n"), fence]


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _yes(flag: Any) -> str:
    return "—" if flag is None else ("yes" if flag else "no")


def _join(items: list[Any] | None, sep: str = "; ") -> str:
    return sep.join(str(x) for x in items or [])


def _bytes(n: int | None) -> str:
    if n is None:
        return "—"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _section(lines: list[str], title: str) -> None:
    while lines and lines[-1] == "":
        lines.pop()
    lines += ["", f"## {title}", ""]


def to_markdown(data: dict[str, Any]) -> str:
    s = data["session"]
    lines: list[str] = [f"# Decision record: {md_cell(s['title'])}", ""]
    hooks = s.get("hooks") or {}
    lines += md_table(
        ["field", "value"],
        [
            ["session", s["id"]],
            ["repository", s["repo"]],
            ["created", s.get("created_at")],
            [
                "target metric",
                f"{s['metric']} ({s['unit'] or 'no unit'}), {s['direction']} is better",
            ],
            ["metric source", f"{s.get('metric_source')} {s.get('metric_pattern') or ''}".strip()],
            *_figures_row(s),
            ["noise threshold", f"±{s['threshold'] * 100:.1f}%"],
            ["correctness check", s["check"]],
            [
                "setup / prepare / cleanup",
                " / ".join(hooks.get(k) or "—" for k in ("setup", "prepare", "cleanup")),
            ],
            ["launcher", s.get("launcher")],
            ["timeout per run", f"{s.get('timeout_s', 0):g} s"],
        ],
    )

    _section(lines, "Steps")
    lines += md_table(
        ["step", "state", "detail"],
        [[x["step"], x["state"].replace("_", " "), x["reason"]] for x in data.get("steps", [])],
    )

    _section(lines, "Workloads")
    lines += md_table(
        ["name", "kind", "scope", "training", "command", "environment"],
        [
            [
                w["name"],
                w["kind"],
                w["scope"],
                _yes(w.get("training")),
                w["command"],
                ", ".join(f"{k}={v}" for k, v in sorted((w.get("env") or {}).items())),
            ]
            for w in data["workloads"]
        ],
    )

    _section(lines, "Baselines")
    if data["baselines"]:
        lines += md_table(
            [
                "Baseline ID",
                "snapshot",
                "ref",
                "dirty",
                "reproducible",
                "reference",
                "runs",
                "reset procedure",
            ],
            [
                [
                    b["baseline_id"],
                    b["snapshot"]["commit"][:12],
                    b["snapshot"]["ref"],
                    _yes(b["snapshot"]["dirty"]),
                    f"{b['reproducibility']} {b.get('reproducibility_detail') or ''}".strip(),
                    ", ".join(f"{k}={v:.6g}" for k, v in b["reference"].items()),
                    b.get("runs_per_workload"),
                    b.get("reset_procedure"),
                ]
                for b in data["baselines"]
            ],
        )
        _section(lines, "Environment")
        for b in data["baselines"]:
            env = b["environment"]
            gpus = "; ".join(
                f"{g.get('name') or '?'} (driver {g.get('driver') or '?'}, "
                f"max SM {g.get('max_sm_clock_mhz') or '?'} MHz, MIG {_yes(g.get('mig_mode'))})"
                for g in env.get("gpus", [])
            )
            lines.append(f"Baseline {md_cell(b['baseline_id'])}:")
            lines.append("")
            lines += md_table(
                ["field", "value"],
                [
                    ["GPU", gpus or env.get("gpu_note") or "none"],
                    [
                        "CUDA runtime / nvcc",
                        f"{env.get('cuda_runtime') or '—'} / {env.get('nvcc') or '—'}",
                    ],
                    ["torch (CUDA)", f"{env.get('torch') or '—'} ({env.get('torch_cuda') or '—'})"],
                    ["Python", env.get("python")],
                    ["OS / kernel", f"{env.get('os') or '—'} / {env.get('kernel') or '—'}"],
                    ["CPU", f"{env.get('cpu_model') or '—'} × {env.get('cpu_count') or '?'}"],
                    ["host", env.get("hostname")],
                    [
                        "variables",
                        ", ".join(
                            f"{k}={v}" for k, v in sorted((env.get("variables") or {}).items())
                        ),
                    ],
                ],
            )
            lines.append("")
    else:
        lines.append("No baseline recorded yet.")

    _section(lines, "Preflight")
    lines += md_table(
        ["field", "value"],
        [["bottleneck", s.get("bottleneck")], ["evidence", s.get("bottleneck_evidence")]],
    )
    lines.append("")
    lines += md_table(
        ["question", "answer", "detail", "evidence", "concern area"],
        [
            [
                p["question"],
                p["kind"].replace("_", " "),
                p["text"],
                p.get("evidence_id"),
                (p.get("concern_area") or "").replace("_", " "),
            ]
            for p in data["preflight"]
        ],
    )
    unknown = [p["question"] for p in data["preflight"] if p["kind"] == "unknown"]
    if unknown:
        lines += ["", f"Still unknown: {md_cell(', '.join(unknown))}."]
    lines += ["", "Checklist:", ""]
    lines += md_table(
        ["#", "item", "done", "note"],
        [
            [c["number"], c.get("item", ""), "✓" if c["done"] else "·", c["note"]]
            for c in data["checklist"]
        ],
    )

    _section(lines, "Hypotheses")
    if data["hypotheses"]:
        lines += md_table(
            ["id", "title", "status", "confidence", "variants"],
            [
                [
                    h["id"],
                    h["title"],
                    h["status"],
                    h["confidence"],
                    ", ".join(h.get("variants", [])),
                ]
                for h in data["hypotheses"]
            ],
        )
        for h in data["hypotheses"]:
            lines += ["", f"### Hypothesis {md_cell(h['id'])}: {md_cell(h['title'])}", ""]
            lines += md_table(
                ["field", "value"],
                [
                    ["observed symptom", h["symptom"]],
                    ["proposed mechanism", h["mechanism"]],
                    ["required preconditions", h["preconditions"]],
                    ["predicted effect on the target metric", h["predicted_effect"]],
                    ["predicted direction", h.get("predicted_direction")],
                    ["predicted independent evidence", h["predicted_evidence"]],
                    ["cheapest falsifying experiment", h["falsifier"]],
                    ["confounders", h["confounders"]],
                    ["cost and risk", h["cost"]],
                    ["confidence", h["confidence"]],
                    ["what would change the confidence", h.get("confidence_update")],
                    ["status", h["status"]],
                    ["reopen when", h["reopen_when"]],
                    [
                        "concern areas",
                        ", ".join(a.replace("_", " ") for a in h.get("concern_areas", [])),
                    ],
                ],
            )
            if h.get("history"):
                lines += ["", "History:", ""]
                lines += md_table(
                    ["when", "what", "from", "to", "why"],
                    [
                        [e["at"], e["field"], e["from_value"], e["to_value"], e["why"]]
                        for e in h["history"]
                    ],
                )
    else:
        lines.append("No hypotheses recorded.")

    _section(lines, "Evidence")
    if data.get("evidence"):
        lines += md_table(
            ["id", "kind", "hypothesis", "variant", "title", "summary"],
            [
                [
                    e["id"],
                    e["kind"],
                    e.get("hypothesis_id"),
                    e.get("variant"),
                    e["title"],
                    e.get("description"),
                ]
                for e in data["evidence"]
            ],
        )
        for e in data["evidence"]:
            tops = (e.get("summary") or {}).get("top_kernels") or []
            if not tops:
                continue
            lines += ["", f"Top kernels of {md_cell(e['id'])}:", ""]
            lines += md_table(
                ["kernel", "launches", "time (µs)", "share", "throughput %"],
                [
                    [
                        k.get("name"),
                        k.get("launches"),
                        _fmt(k.get("time_us"), 1),
                        "—" if k.get("share") is None else f"{k['share'] * 100:.1f}%",
                        ", ".join(f"{n}={v:g}" for n, v in (k.get("percent") or {}).items()),
                    ]
                    for k in tops
                ],
            )
    else:
        lines.append("No evidence attached.")

    _section(lines, "Variants")
    if data["variants"]:
        lines += md_table(
            ["name", "kind", "hypothesis", "snapshot", "ref", "source", "diff stat"],
            [
                [
                    v["name"],
                    v.get("kind", "probe" if v["probe"] else "change"),
                    v["hypothesis_id"],
                    v["snapshot"]["commit"][:12],
                    v["snapshot"]["ref"],
                    v.get("source"),
                    v.get("diff_stat"),
                ]
                for v in data["variants"]
            ],
        )
    else:
        lines.append("No variants recorded.")

    _section(lines, "Rounds")
    if data["rounds"]:
        # Every workload a torch one with the same figure: name that figure, not the contract's.
        figures = set((s.get("metrics") or {}).values()) if _figures_row(s) else set()
        metric = md_cell(figures.pop() if len(figures) == 1 else s["metric"])
        if s["direction"] == "higher":
            legend = (
                f"ratio = baseline / variant of {metric} (higher is better, so the ratio is "
                "inverted): below 1 means better, as for every metric."
            )
        else:
            legend = (
                f"ratio = variant / baseline of {metric} (lower is better): below 1 means better."
            )
        lines += [legend, ""]
    for r in data["rounds"]:
        lines.append(
            f"### Round {r['number']} ({md_cell(r['status'])}, {r['blocks']} blocks, "
            f"baseline {md_cell(r['baseline_id'])})"
        )
        lines.append("")
        check = "—" if r["baseline_check"] is None else f"{r['baseline_check']:.3f}"
        lines.append(
            f"Baseline check: {md_cell(check)} against the reference "
            f"({md_cell(_REPRODUCED[r['baseline_reproduced']])}); "
            f"seed {md_cell(r['seed'])}, threshold ±{r['threshold'] * 100:.1f}%."
        )
        lines.append("")
        lines += md_table(
            ["variant", "workload", "scope", "ratio", "95% CI", "verdict", "n", "trust"],
            [
                [
                    c["variant"],
                    c["workload"],
                    (c.get("scope") or "").replace("_", " "),
                    _fmt(c["ratio"]),
                    f"[{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]",
                    c["verdict"]
                    + (f" (~{c['blocks_needed']} more blocks)" if c.get("blocks_needed") else ""),
                    c["n"],
                    _trust_text(c),
                ]
                for c in r["comparisons"]
            ],
        )
        engine = r.get("summary") or {}
        elapsed = engine.get("elapsed_s")
        facts: list[list[Any]] = [
            ["stopped because", engine.get("stop_reason")],
            ["elapsed", f"{elapsed:g} s" if isinstance(elapsed, (int, float)) else None],
            ["skipped blocks", _join(engine.get("skipped_blocks"), ", ")],
            [
                "worker options",
                _join(
                    [
                        f"{k}: {json.dumps(v, sort_keys=True)}"
                        for k, v in (engine.get("worker_options") or {}).items()
                    ]
                ),
            ],
            ["notes", _join(engine.get("notes"))],
            ["error", engine.get("error")],
        ]
        facts = [f for f in facts if f[1]]
        if facts:
            lines.append("")
            lines += md_table(["round fact", "value"], facts)
        for c in r["comparisons"]:
            if c.get("error") or c.get("note"):
                who = f"{md_cell(c['variant'])}/{md_cell(c['workload'])}"
                lines += ["", f"{md_cell(c['verdict'])}: {who}, {md_cell(c.get('note') or '')}", ""]
                lines += md_code((c.get("error") or "").splitlines())
        summary = r.get("search_round") or {}
        if summary:
            from session.residuals import ROUND_SUMMARY_FIELDS

            lines += ["", "Round summary:", ""]
            lines += md_table(
                ["field", "value"],
                [
                    [label, summary.get(key, "")]
                    for key, label in _SUMMARY_LABELS.items()
                    if key in ROUND_SUMMARY_FIELDS
                ],
            )
        lines.append("")
    if not data["rounds"]:
        lines.append("No rounds run yet.")

    _section(lines, "Correctness")
    if data["correctness"]:
        lines += md_table(
            ["variant", "workload", "passed", "exact", "trials", "seeds", "suggested class"],
            [
                [
                    c["variant"],
                    c["workload"],
                    _yes(c["passed"]),
                    _yes(c["exact"]),
                    c["trials"],
                    ", ".join(str(x) for x in c["seeds"]),
                    c["suggested_class"],
                ]
                for c in data["correctness"]
            ],
        )
        stats = [(c, st) for c in data["correctness"] for st in c["stats"]]
        if stats:
            lines += ["", "Error statistics:", ""]
            lines += md_table(
                [
                    "variant",
                    "workload",
                    "output",
                    "shape/dtype",
                    "max abs",
                    "mean abs",
                    "max rel",
                    "ULP max / p50 / p99",
                    "mismatches",
                    "NaN ref/new",
                    "Inf ref/new",
                    "±0 diffs",
                    "worst index",
                    "bit-identical",
                ],
                [
                    [
                        c["variant"],
                        c["workload"],
                        st["output"],
                        "equal"
                        if st["shape_equal"] and st["dtype_equal"]
                        else f"{st['ref_shape']} {st['ref_dtype']} → "
                        f"{st['new_shape']} {st['new_dtype']}",
                        _sci(st["max_abs"]),
                        _sci(st["mean_abs"]),
                        _sci(st["max_rel"]),
                        f"{_sci(st['ulp_max'])} / {_sci(st['ulp_p50'])} / {_sci(st['ulp_p99'])}",
                        f"{st['mismatches']} ({st['mismatch_share'] * 100:.2f}%)",
                        f"{st['nan_ref']}/{st['nan_new']}",
                        f"{st['inf_ref']}/{st['inf_new']}",
                        st["signed_zero_diffs"],
                        st["worst_index"],
                        _yes(st["bit_identical"]),
                    ]
                    for c, st in stats
                ],
            )
        for c in data["correctness"]:
            lines += _check_details(c)
    else:
        lines.append("No correctness results yet.")

    _section(lines, "Audits")
    if data.get("audits"):
        base = {a["workload"]: a for a in data["audits"] if a["arm_id"] == "baseline"}
        lines += md_table(
            [
                "arm",
                "workload",
                "device",
                "dtype",
                "kernel launches",
                "operators",
                "allocations",
                "peak",
            ],
            [
                [
                    a["arm"],
                    a["workload"],
                    a["device"],
                    a["dtype"],
                    _delta(a, base.get(a["workload"]), "kernel_launches"),
                    _delta(a, base.get(a["workload"]), "operator_count"),
                    _delta(a, base.get(a["workload"]), "allocation_count"),
                    _delta(a, base.get(a["workload"]), "peak_bytes", _bytes),
                ]
                for a in data["audits"]
            ],
        )
    else:
        lines.append("No audits recorded.")

    _section(lines, "Residuals")
    if data.get("residuals"):
        lines += md_table(
            ["variant", "hypothesis", "suggested", "confirmed", "confidence", "reading"],
            [
                [
                    r["variant"],
                    r.get("hypothesis_id"),
                    r["suggested"].replace("_", " "),
                    (r.get("confirmed") or "not yet").replace("_", " "),
                    f"{r['confidence_from']} → {r['confidence_to']}"
                    if r.get("confidence_from")
                    else "—",
                    r.get("note") or r.get("description"),
                ]
                for r in data["residuals"]
            ],
        )
    else:
        lines.append("No residuals read yet.")

    _section(lines, "Dispositions")
    if data["dispositions"]:
        lines += md_table(
            ["variant", "choice", "class", "guards", "fallback", "reopen when"],
            [
                [
                    d["variant"],
                    d["choice"],
                    d["class"],
                    "; ".join(d["guards"]),
                    d["fallback"],
                    d["reopen_when"],
                ]
                for d in data["dispositions"]
            ],
        )
        for d in data["dispositions"]:
            lines += ["", f"### {md_cell(d['variant'])}: {md_cell(d['choice'])}", ""]
            lines += md_table(
                ["field", "value"],
                [
                    ["optimization class", d["class"]],
                    ["semantics change accepted", _yes(d.get("accepted_semantics"))],
                    ["guard conditions", _join(d["guards"])],
                    ["fallback", d["fallback"]],
                    ["failure cases", _join(d.get("failure_cases"))],
                    ["remaining bottlenecks", _join(d.get("remaining_bottlenecks"))],
                    ["reason", d.get("reason")],
                    ["reopen when", d["reopen_when"]],
                    ["preflight still unknown", _join(d.get("open_questions"), ", ")],
                    ["decided", d.get("created_at")],
                ],
            )
    else:
        lines.append("No dispositions recorded.")

    _section(lines, "Measurement plan")
    plan = data.get("measurement_plan") or []
    if not plan:
        lines.append("Nothing measured yet.")
    for i, item in enumerate(plan, 1):
        lines += [f"### {i}. {md_cell(item['figure'])}", ""]
        if item.get("refs"):
            lines += md_table(["snapshot refs"], [[ref] for ref in item["refs"]])
            lines.append("")
        lines += md_code(item["commands"])
        if item.get("note"):
            lines += ["", md_cell(item["note"])]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


_REPRODUCED = {
    True: "reproduced",
    False: "NOT reproduced: verdicts untrusted",
    None: "not judged",
}

_SUMMARY_LABELS = {
    "baseline_id": "Baseline ID",
    "reset_procedure": "reset / restore",
    "hypotheses": "hypotheses",
    "variants": "variants",
    "baseline_check": "per-variant baseline check",
    "results": "results",
    "confidence_updates": "confidence updates",
    "residuals": "residuals",
    "disposition": "disposition",
    "next": "next profile or reopening condition",
}


def _figures_row(s: dict[str, Any]) -> list[list[Any]]:
    """A row naming each workload's figure, when one differs from the contract's metric
    (a torch workload's is ms per call)."""
    plain = f"{s['metric']} ({s['unit'] or 'no unit'})"
    figures = {k: v for k, v in (s.get("metrics") or {}).items() if v != plain}
    if not figures:
        return []
    return [["figure per workload", _join([f"{k}: {v}" for k, v in figures.items()])]]


def _check_details(c: dict[str, Any]) -> list[str]:
    """What one check did and did not try, what it warned of, and why it failed."""
    out: list[str] = []
    rows: list[list[Any]] = [[k.replace("_", " "), v if isinstance(v, str) else json.dumps(v)]
                             for k, v in (c.get("options") or {}).items()]  # fmt: skip
    rows += [["warning", w] for w in c.get("warnings") or []]
    for x in c.get("stress") or []:
        rows.append([f"stress {x.get('kind')}", "passed" if x.get("passed") else
                     f"FAILED: {x.get('mismatches')} mismatches, NaN {x.get('nan_ref')}→"
                     f"{x.get('nan_new')}, Inf {x.get('inf_ref')}→{x.get('inf_new')}"])  # fmt: skip
    nondet = c.get("nondeterminism") or {}
    for side in ("baseline", "variant"):
        if nondet.get(side):
            rows.append([f"nondeterministic ({side})", json.dumps(nondet[side])])
    if c.get("class_reason"):
        rows.append(["class reason", c["class_reason"]])
    if rows:
        out += ["", f"Check of {md_cell(c['variant'])}/{md_cell(c['workload'])}:", ""]
        out += md_table(["what", "value"], rows)
    if c.get("error"):
        out += ["", f"{md_cell(c['variant'])}/{md_cell(c['workload'])} failed:", ""]
        out += md_code(str(c["error"]).splitlines())
    return out


def _sci(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def _trust_text(c: dict[str, Any]) -> str:
    counts = c.get("trust") or {}
    parts = [f"{k} {v}" for k, v in sorted(counts.items())]
    if c.get("untrusted_runs"):
        parts.append(f"{c['untrusted_runs']} untrusted run(s) quarantined")
    if c.get("failed_runs"):
        parts.append(f"{c['failed_runs']} failed")
    return ", ".join(parts) or "—"


def _delta(a: dict[str, Any], base: dict[str, Any] | None, key: str, fmt: Any = None) -> str:
    show = fmt or (lambda v: "—" if v is None else str(v))
    value = a.get(key)
    if base is None or a["arm_id"] == "baseline" or value is None or base.get(key) is None:
        return show(value)
    return f"{show(base[key])} → {show(value)}"
