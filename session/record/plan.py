"""The measurement plan: the exact commands and snapshot refs behind every figure.

Each block checks its snapshots out in worktrees of its own (`mktemp -d`, so a block pasted
twice, or after another, never meets a path already taken), away from the person's work.
Contract commands are shell text and appear as written; every other value (paths, names,
ids, refs) is quoted, so pasting a block runs that block and nothing else.
"""

from __future__ import annotations

import re
import shlex

from session import commands
from session import models as m
from session.md import words as stored_words
from session.record.rows import PlanItem


def _tree(var: str, repo: str, name: str, commit: str, subdir: str = "") -> list[str]:
    """A fresh worktree of commit in `$var` (a new folder each time), entered at subdir."""
    where = f'"${var}"' + (f"/{shlex.quote(subdir)}" if subdir and subdir != "." else "")
    return [
        f"{var}=$(mktemp -d {commands.scratch_dir(name)}.XXXXXX)",
        f'{commands.command("git", "-C", repo, "worktree", "add", "--detach")} "${var}" '
        f"{shlex.quote(commit)}",
        f"cd {where}",
    ]


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
        env = [f"{k}={shlex.quote(v)}" for k, v in pairs]
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
) -> list[PlanItem]:
    c = session.contract
    repo = session.repo
    subdir = commands.subdir_of(repo)
    sid = session.id
    names = {v.id: v.name for v in variants}
    by_id = {v.id: v for v in variants}
    plan: list[PlanItem] = []
    for b in baselines:
        cmds = _tree("tree", repo, f"baseline-{b.id}", b.snapshot.commit, subdir)
        if c.hooks.setup:
            cmds.append(c.hooks.setup)
        if c.hooks.prepare:
            cmds.append(c.hooks.prepare)
        cmds += [_workload_line(w, c) for w in c.workloads]
        cmds.append(commands.gpuopt("baseline", sid, "--runs", str(b.runs_per_workload)))
        plan.append(
            PlanItem(
                figure=f"reference results of baseline {b.id}",
                refs=[b.snapshot.ref, b.snapshot.commit],
                commands=cmds,
                note=f"{b.runs_per_workload} runs per workload, warm-up excluded; "
                f"metric: {c.metric.name} ({c.metric.source.value})",
            )
        )
    for r in rounds:
        vnames = [names.get(v, v) for v in r.variant_ids]
        cmds = []
        for i, vid in enumerate(x for x in r.variant_ids if x in by_id):
            # for reading the variants' code: gpuopt round makes its own worktrees
            cmds += _tree(f"tree{i + 1}", repo, f"round{r.number}-{names[vid]}",
                          by_id[vid].snapshot.commit)[:2]  # fmt: skip
        words = ["round", sid, "--variants", ",".join(vnames), "--min-blocks",
                 str(r.min_blocks), "--max-blocks", str(r.max_blocks),
                 "--threshold", f"{r.threshold:g}", "--seed", str(r.seed)]  # fmt: skip
        if r.budget_s:
            words += ["--budget", f"{r.budget_s:g}"]
        cmds.append(commands.gpuopt(*words))
        refs = [b.snapshot.ref for b in baselines if b.id == r.baseline_id]
        refs += [by_id[v].snapshot.ref for v in r.variant_ids if v in by_id]
        plan.append(
            PlanItem(
                figure=f"comparisons of round {r.number}",
                refs=refs,
                commands=cmds,
                note=f"baseline {r.baseline_id}; blocks in a fresh random order per block "
                f"(seed {r.seed}); {r.blocks} blocks ran",
            )
        )
    if c.check:
        for v in variants:
            plan.append(
                PlanItem(
                    figure=f"correctness of {v.name}",
                    refs=[v.snapshot.ref, v.snapshot.commit],
                    commands=[
                        *_tree("tree", repo, f"check-{v.name}", v.snapshot.commit, subdir),
                        c.check,
                    ],
                    note="exit status 0 passes",
                )
            )
    for e in evidence:
        if e.path:
            sha = str(e.summary.get("file", e.summary).get("sha256", ""))
            plan.append(
                PlanItem(
                    figure=f"{stored_words(e.kind)} evidence: {e.title or e.id}",
                    refs=[],
                    commands=[commands.command("sha256sum", e.path)],
                    note=f"evidence {e.id}" + (f"; expect sha256 {sha}" if sha else ""),
                )
            )
    return plan
