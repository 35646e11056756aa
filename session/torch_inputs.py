"""A variant whose KernelBench file brings its own inputs, found from the snapshots alone.

The torch harness never uses a variant's get_inputs()/get_init_inputs(): the reference's
drive both sides, in the check and in every timed call. A file that redefines them still
says something a person must see: what it would run on in production is not what was
measured. `variant add` and the round say so (`redefined_inputs`), and keep-default
refuses such a variant until it is accepted with a reason (`gates.own_inputs_refusals`).
Nothing here imports torch or runs the file: both versions are parsed.
"""

from __future__ import annotations

import ast

from measure.git import GitError, git
from measure.harness import HarnessError, split_spec
from session import models as m
from session.ledger_port import LedgerLike

INPUT_FUNCTIONS = ("get_inputs", "get_init_inputs")


def _functions(source: str) -> dict[str, str]:
    """The last top-level definition of each input function, as a normalised tree."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in INPUT_FUNCTIONS:
            found[node.name] = ast.dump(ast.Module(body=node.body, type_ignores=[]))
    return found


def _show(repo: str, commit: str, path: str) -> str | None:
    try:
        proc = git(["show", f"{commit}:./{path}"], repo)
    except GitError:
        return None
    return proc.stdout.decode("utf-8", "replace")


def redefined(reference: str, variant: str) -> list[str]:
    """The input functions the variant's source defines differently from the reference's."""
    ref, new = _functions(reference), _functions(variant)
    return [name for name in INPUT_FUNCTIONS if name in new and new[name] != ref.get(name)]


def redefined_inputs(session: m.Session, base_commit: str, variant: m.Variant) -> list[str]:
    """One warning per KernelBench workload whose file, in the variant's snapshot, redefines
    get_inputs() or get_init_inputs() against the baseline's snapshot."""
    out = []
    for w in session.contract.workloads:
        if w.kind is not m.WorkloadKind.KERNELBENCH:
            continue
        try:
            _, path = split_spec(w.kind.value, w.command)
        except HarnessError:
            continue
        ref = _show(session.repo, base_commit, path)
        new = _show(session.repo, variant.snapshot.commit, path)
        if ref is None or new is None:
            continue
        names = redefined(ref, new)
        if names:
            out.append(
                f"{w.name}: {variant.name}'s {path} redefines "
                f"{' and '.join(n + '()' for n in names)}: gpuopt times and checks it on the "
                "baseline's inputs only, and keep-default refuses it until accepted with a "
                "reason (--accept-semantics --reason)"
            )
    return out


def round_notes(session: m.Session, base_commit: str, variants: list[m.Variant]) -> list[str]:
    """The round's notes about variants that bring their own inputs."""
    return [note for v in variants for note in redefined_inputs(session, base_commit, v)]


def variant_add_warnings(ledger: LedgerLike, session: m.Session, variant: m.Variant) -> list[str]:
    """What `variant add` says about inputs, against the latest baseline (none without one)."""
    baseline = ledger.latest_baseline(session.id)
    if baseline is None:
        return []
    return redefined_inputs(session, baseline.snapshot.commit, variant)
