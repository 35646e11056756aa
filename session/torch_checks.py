"""Correctness checks and audits of torch workloads, recorded in the ledger.

`check_variant` runs the baseline's and the variant's checkouts on the same seeded trials and
stores one CorrectnessResult per torch workload, with error statistics per output (and per
gradient on a training path) and the suggested optimization class. `audit_arm` stores one
Audit per torch workload: the mechanism evidence (kernel launches, operators, allocations,
peak bytes). The tensors themselves go to an artifacts directory beside the ledger, never
into SQLite. torch is never imported here: the worker runs in a subprocess.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from measure import harness, numerics
from session import models as m
from session.errors import BadInput
from session.ledger_port import LedgerLike

# What the torch harness checks on every torch workload, in a few words (the contract shows it).
HARNESS_CHECK = (
    "the torch harness compares each variant's outputs with the baseline's on the same "
    "inputs (re-initialised weights, stress inputs, a repeat call): error statistics, "
    "NaN/Inf counts, a suggested numerical class"
)

DEFAULT_TRIALS = 5
_TORCH_KINDS = (m.WorkloadKind.TORCH, m.WorkloadKind.KERNELBENCH)


def torch_workloads(session: m.Session) -> list[m.Workload]:
    return [w for w in session.contract.workloads if w.kind in _TORCH_KINDS]


def artifacts_dir(ledger: LedgerLike, session: m.Session) -> Path:
    """<ledger file>.artifacts/<session id>/ beside the ledger (created on demand)."""
    path = Path(ledger.path)
    return path.parent / f"{path.name}.artifacts" / session.id


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80] or "workload"


def _head_commit(directory: Path) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "--no-optional-locks", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    head = proc.stdout.strip()
    return head if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", head) else None


def _error_stats(raw: dict[str, Any]) -> m.ErrorStats:
    fields = m.ErrorStats.model_fields
    return m.ErrorStats(**{k: v for k, v in raw.items() if k in fields and v is not None})


def _summary(stats: list[m.ErrorStats], problems: list[str]) -> str:
    lines = list(problems)
    for s in stats:
        if s.none_on:
            lines.append(f"{s.output}: the gradient is None on the {s.none_on} side")
            continue
        if not s.shape_equal:
            lines.append(f"{s.output}: shape {s.ref_shape} → {s.new_shape}")
            continue
        bits = [f"{s.output}:", "bit-identical" if s.bit_identical else ""]
        if not s.bit_identical and s.max_abs is not None:
            bits.append(f"max abs {s.max_abs:.3g}, max rel {s.max_rel or 0:.3g}")
            if s.ulp_max is not None:
                bits.append(f"ULP max {s.ulp_max:.0f}")
            bits.append("(rel and ULP over |ref| > atol")
            bits.append(f"; {s.near_zero_diffs} near-zero differences)")
        if s.mismatches:
            bits.append(f"{s.mismatches} mismatches ({s.mismatch_share:.2%}) at {s.worst_index}")
        if s.nan_ref or s.nan_new or s.inf_ref or s.inf_new:
            bits.append(f"NaN {s.nan_ref}→{s.nan_new}, Inf {s.inf_ref}→{s.inf_new}")
        if not s.dtype_equal:
            bits.append(f"dtype {s.ref_dtype}→{s.new_dtype}")
        lines.append(" ".join(b for b in bits if b))
    return "\n".join(lines)


def _groups(workloads: list[m.Workload]) -> list[list[m.Workload]]:
    """Workloads that share an environment run in one worker process (torch imported once)."""
    groups: dict[tuple[tuple[str, str], ...], list[m.Workload]] = {}
    for w in workloads:
        groups.setdefault(tuple(sorted(w.env.items())), []).append(w)
    return list(groups.values())


def _run(
    session: m.Session, jobs: list[dict[str, Any]], worktree: Path, env: dict[str, str]
) -> list[harness.WorkerResult]:
    c = session.contract
    return harness.run_jobs(
        jobs, worktree, python=c.python, env=env, timeout_s=c.timeout_s, launcher=c.launcher
    )


BASELINE_ARM = "baseline"

# Audits measured by check_variant in the same worker process as the outputs (one torch
# import per side instead of two), handed to audit_arm for the same arm and worktree.
_PREFETCHED: dict[tuple[str, str, str], dict[str, m.Audit]] = {}


def _tree_key(session: m.Session, arm: str, tree: Path) -> tuple[str, str, str]:
    return (session.id, arm, str(Path(tree).resolve()))


def _audit_job(w: m.Workload) -> dict[str, Any]:
    return {
        "name": w.name,
        "mode": "audit",
        "kind": w.kind.value,
        "spec": w.command,
        "training": w.training,
    }


def _audit_from(session: m.Session, arm: str, w: m.Workload, r: harness.WorkerResult) -> m.Audit:
    d = r.data
    return m.Audit(
        session_id=session.id,
        arm=arm,
        workload=w.name,
        device=str(d.get("device") or "cpu"),
        dtype=str(d.get("dtype") or ""),
        kernel_launches=d.get("kernel_launches") if r.ok else None,
        operator_count=d.get("operator_count") if r.ok else None,
        allocation_count=d.get("allocation_count") if r.ok else None,
        peak_bytes=d.get("peak_bytes") if r.ok else None,
        allocated_bytes=d.get("allocated_bytes") if r.ok else None,
        peak_source=str(d.get("peak_source") or "") if r.ok else "",
        process_peak_bytes=d.get("process_peak_bytes") if r.ok else None,
        top_ops=list(d.get("top_ops") or []) if r.ok else [],
        notes=([f"ran {d['source']}"] if d.get("source") else [])
        + [str(n) for n in d.get("notes", [])],
        error="" if r.ok else (r.error or "the audit failed")[:500],
    )


def _with_audits(
    session: m.Session,
    arm: str,
    tree: Path,
    group: list[m.Workload],
    jobs: list[dict[str, Any]],
    prefetch: bool,
) -> list[harness.WorkerResult]:
    """Run `jobs` in one process in `tree`, the arm's audits first when they are not known yet."""
    key = _tree_key(session, arm, tree)
    known = _PREFETCHED.get(key, {})
    audit = [w for w in group if w.name not in known] if prefetch and jobs else []
    ran = _run(session, [_audit_job(w) for w in audit] + jobs, tree, group[0].env)
    if audit:
        if len(_PREFETCHED) > 256:  # worktrees of long-gone rounds
            _PREFETCHED.clear()
        found = _PREFETCHED.setdefault(key, {})
        for w, r in zip(audit, ran, strict=False):
            found[w.name] = _audit_from(session, arm, w, r)
    return ran[len(audit) :]


MORE_TRIALS = 3  # a close result runs this many times the trials again, on new seeds
CLOSE = 0.5  # "close": the worst error is at least half of what the tolerance allows
# Part of the cache key and of the saved outputs' folders: a new check never reuses an old
# one's result, nor the reference outputs an older worker saved (3: the NaN/Inf stress
# input puts its values in other places, so a reference of 2 would not match it).
CHECK_VERSION = 3


def trial_tag(w: m.Workload, seed: int, trials: int, stress: bool) -> str:
    """The folder name of one side's saved outputs for these trials."""
    tag = f"{_slug(w.name)}-v{CHECK_VERSION}-s{seed}-t{trials}{'-stress' if stress else ''}"
    return tag + ("-train" if w.training else "")


def _inputs_from(w: m.Workload, baseline_dir: Path) -> str | None:
    """The reference's problem file, whose get_inputs/get_init_inputs drive both sides."""
    if w.kind is not m.WorkloadKind.KERNELBENCH:
        return None
    _, target = harness.split_spec(w.kind.value, w.command)
    path = Path(target) if Path(target).is_absolute() else Path(baseline_dir) / target
    return str(path)


def _saved(path: Path) -> bool:
    return (path / "index.json").is_file()


def _disk_bytes(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.iterdir() if f.is_file())
        elif p.is_file():
            total += p.stat().st_size
    return total


def cache_key(
    w: m.Workload,
    base_commit: str | None,
    variant_commit: str | None,
    seeds: list[int],
    exact: bool,
) -> str:
    """(baseline snapshot, variant snapshot, seeds, tolerance) and what defines the check."""
    import hashlib
    import json

    if not base_commit or not variant_commit:
        return ""
    parts = [CHECK_VERSION, base_commit, variant_commit, w.kind.value, w.command, w.training]
    parts += [sorted(w.env.items()), seeds, exact]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:24]


def _cached(ledger: LedgerLike, session: m.Session, variant: m.Variant, key: str) -> Any:
    if not key:
        return None
    found = None
    for r in ledger.list(m.CorrectnessResult, session_id=session.id, variant_id=variant.id):
        if r.cache_key == key and all(Path(a).exists() for a in r.artifacts):
            found = r
    return found


def check_variant(
    ledger: LedgerLike,
    session: m.Session,
    variant: m.Variant,
    baseline_dir: Path,
    variant_dir: Path,
    *,
    trials: int = DEFAULT_TRIALS,
    seed: int | None = None,
    exact: bool = False,
    prefetch_audits: bool = True,
    more_when_close: bool = True,
) -> list[m.CorrectnessResult]:
    """Compare a variant with the baseline on every torch workload; store and return the results.

    Trials use seeds seed, seed+1, …, then stress trials (inputs ×100, ×1e-3, zeros, NaN/Inf)
    and a repeat call per trial (nondeterminism). The reference's KernelBench inputs drive
    both sides; parameters and buffers are re-initialised at random, alike on both sides.
    A result that passes close to the tolerance runs MORE_TRIALS× the trials again on new
    seeds: it fails if any trial fails, and N counts them all. The baseline's outputs are
    kept per baseline commit and reused; a result already known for the same (baseline
    snapshot, variant snapshot, seeds, tolerance) is reused and nothing runs again.
    With exact=True (a C1 or N/A claim) only bit-identical passes. Without `seed`, the first
    seed is drawn at random (a candidate cannot know it before it runs) and recorded after.
    """
    base_commit = _head_commit(Path(baseline_dir))
    var_commit = _head_commit(Path(variant_dir))
    drawn = seed is None
    if seed is None:
        import secrets

        seed = secrets.randbelow(2**31 - 10_000)
    # A drawn seed is not part of what the check is: the same snapshots reuse the result.
    seeds = [-1] if drawn else list(range(seed, seed + trials))
    results: dict[str, m.CorrectnessResult] = {}
    order = [w.name for w in torch_workloads(session)]
    todo: list[m.Workload] = []
    for w in torch_workloads(session):
        hit = _cached(ledger, session, variant, cache_key(w, base_commit, var_commit, seeds, exact))
        if hit is not None:
            results[w.name] = hit
        else:
            todo.append(w)
    fresh = _check(
        ledger, session, variant, baseline_dir, variant_dir, todo, seed, trials, exact,
        prefetch_audits, stress=True,
    )  # fmt: skip
    if more_when_close:
        close = [
            w
            for w in todo
            if fresh[w.name].passed and _is_close(fresh[w.name]) and fresh[w.name].stats
        ]
        if close:
            again = _check(
                ledger, session, variant, baseline_dir, variant_dir, close, seed + trials,
                trials * MORE_TRIALS, exact, False, stress=False,
            )  # fmt: skip
            for w in close:
                fresh[w.name] = _merge(fresh[w.name], again[w.name])
    for w in todo:
        r = fresh[w.name]
        r.cache_key = cache_key(w, base_commit, var_commit, seeds, exact)
        if drawn:
            r.options = {**r.options, "seeds_drawn": "at random for this check, recorded after"}
        r.artifact_bytes = _disk_bytes([Path(a) for a in r.artifacts])
        results[w.name] = r
    done = [results[n] for n in order if n in results]
    new = [results[w.name] for w in todo]
    if new:
        ledger.put(*new)
    return done


def _is_close(r: m.CorrectnessResult) -> bool:
    if r.exact:
        return False
    worst = max((s.closeness or 0.0 for s in r.stats), default=0.0)
    nondet = bool((r.nondeterminism or {}).get("baseline"))
    return worst >= CLOSE or nondet


def _merge(first: m.CorrectnessResult, more: m.CorrectnessResult) -> m.CorrectnessResult:
    """One result over every trial: it fails if any trial failed; N counts them all."""
    out = first.model_copy(deep=True)
    out.trials = first.trials + more.trials
    out.seeds = list(first.seeds) + list(more.seeds)
    start = more.seeds[0] if more.seeds else "?"
    why = f"{more.trials} more (seeds from {start}), because the first pass was close"
    out.options = {**first.options, "more_trials_when_close": why}
    out.artifacts = list(first.artifacts) + list(more.artifacts)
    if not more.passed:
        out.passed = False
        out.stats = more.stats
        out.suggested_class, out.class_reason = more.suggested_class, more.class_reason
        out.output_tail = f"the extra trials failed:\n{more.output_tail}"
        out.error = more.error
    out.warnings = list(dict.fromkeys([*first.warnings, *more.warnings]))
    return out


def _check(
    ledger: LedgerLike,
    session: m.Session,
    variant: m.Variant,
    baseline_dir: Path,
    variant_dir: Path,
    workloads: list[m.Workload],
    seed: int,
    trials: int,
    exact: bool,
    prefetch_audits: bool,
    stress: bool,
) -> dict[str, m.CorrectnessResult]:
    root = artifacts_dir(ledger, session)
    base_commit = _head_commit(Path(baseline_dir))
    seeds = list(range(seed, seed + trials))
    results: dict[str, m.CorrectnessResult] = {}
    for group in _groups(workloads):
        paths: dict[str, tuple[Path, Path]] = {}
        for w in group:
            tag = trial_tag(w, seed, trials, stress)
            ref_path = (
                root / "reference" / f"{base_commit[:16]}-{tag}"
                if base_commit
                else root / variant.id / f"{tag}-reference"
            )
            paths[w.name] = (ref_path, root / variant.id / tag)

        def job(
            w: m.Workload, save: Path, compare_to: Path | None = None, inputs: str | None = None
        ) -> dict[str, Any]:
            return {
                "name": w.name,
                "mode": "outputs",
                "kind": w.kind.value,
                "spec": w.command,
                "training": w.training,
                "trials": trials,
                "seed": seed,
                "save": str(save),
                "compare_to": str(compare_to) if compare_to else None,
                "inputs_from": inputs,
                "stress": stress,
                "exact": exact,
                "tolerance": declared_tolerance(w),
            }

        # The baseline side, for the references not already kept.
        missing = [w for w in group if not _saved(paths[w.name][0])]
        tmp = {
            w.name: paths[w.name][0].with_name(paths[w.name][0].name + f".{variant.id}.tmp")
            for w in missing
        }
        for w in missing:
            paths[w.name][0].parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp[w.name], ignore_errors=True)
        ran = _with_audits(
            session,
            BASELINE_ARM,
            Path(baseline_dir),
            group,
            [job(w, tmp[w.name]) for w in missing],
            prefetch_audits,
        )
        for w, r in zip(missing, ran, strict=True):
            if r.ok and _saved(tmp[w.name]):
                shutil.rmtree(paths[w.name][0], ignore_errors=True)
                tmp[w.name].replace(paths[w.name][0])
                continue
            shutil.rmtree(tmp[w.name], ignore_errors=True)
            results[w.name] = _failed(session, variant, w, seeds, r, "the baseline side failed")
        todo = [w for w in group if w.name not in results]
        for w in todo:
            shutil.rmtree(paths[w.name][1], ignore_errors=True)
        ran = _with_audits(
            session,
            variant.id,
            Path(variant_dir),
            group,
            [
                job(w, paths[w.name][1], paths[w.name][0], _inputs_from(w, Path(baseline_dir)))
                for w in todo
            ],
            prefetch_audits,
        )
        for w, r in zip(todo, ran, strict=True):
            if not r.ok:
                results[w.name] = _failed(session, variant, w, seeds, r, "the variant failed")
                results[w.name].artifacts = [str(paths[w.name][0])]
                continue
            results[w.name] = _result(session, variant, w, seeds, r, paths[w.name])
    return results


TOLERANCE_ENV = "GPUOPT_TORCH_TOLERANCE"


def declared_tolerance(w: m.Workload) -> list[float] | None:
    """The tolerance the contract declares for a workload ("RTOL,ATOL" in its environment,
    GPUOPT_TORCH_TOLERANCE): only then may a variant change the output's precision."""
    raw = w.env.get(TOLERANCE_ENV, "").replace(" ", "")
    if not raw:
        return None
    try:
        rtol, atol = (float(x) for x in raw.split(","))
    except ValueError:
        raise BadInput(f"{w.name}: {TOLERANCE_ENV} must be RTOL,ATOL, not {raw!r}") from None
    return [rtol, atol]


_TRIAL_WORDS = {
    "x100": "stress ×100",
    "x1e-3": "stress ×1e-3",
    "zeros": "stress zeros",
    "nan_inf": "stress NaN/Inf",
}


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{float(v):.3g}"


def headline(data: dict[str, Any], stats: list[m.ErrorStats]) -> str:
    """One line that names the trial that failed and its biggest error (or that it passed)."""
    if data.get("passed"):
        precision = str(data.get("precision") or "")
        return f"passed{' ' + precision if precision else ''}"
    for s in stats:
        if s.none_on or not s.shape_equal:
            break
        if s.passed is False:
            dtype = (
                f"dtype {s.new_dtype}, the reference's is {s.ref_dtype}; "
                if not s.dtype_equal
                else ""
            )
            # NaN/Inf first: the biggest error a finite max abs cannot show
            nonfinite = "".join(
                f"{word} {ref}→{new}, "
                for word, ref, new in (("NaN", s.nan_ref, s.nan_new), ("Inf", s.inf_ref, s.inf_new))
                if ref != new
            )
            return (
                f"failed on seed {s.worst_seed}: {s.output} {dtype}{nonfinite}"
                f"max abs {_num(s.max_abs)}, {s.mismatches} mismatches ({s.mismatch_share:.2%})"
            )
    for x in data.get("stress") or []:
        if not x.get("passed"):
            return (
                f"failed on {_TRIAL_WORDS.get(str(x['kind']), str(x['kind']))}: max abs "
                f"{_num(x.get('max_abs'))}, {x.get('mismatches')} mismatches, NaN "
                f"{x.get('nan_ref')}→{x.get('nan_new')}"
            )
    refill = data.get("refill") or {}
    if refill and not refill.get("passed"):
        return (
            f"failed on the same input objects with new contents: max abs "
            f"{_num(refill.get('max_abs'))}, {refill.get('mismatches')} mismatches"
        )
    nondet = (data.get("nondeterminism") or {}).get("variant") or {}
    base_nondet = (data.get("nondeterminism") or {}).get("baseline") or {}
    mine = {k: v for k, v in nondet.items() if not base_nondet.get(k)}
    if mine:
        name, n = next(iter(mine.items()))
        return f"failed on the repeat call: {name} differs between calls in {n} element(s)"
    timed = data.get("timed_recheck") or {}
    if timed.get("failures"):
        return "failed on the " + str(timed["failures"][0]).replace("re-check:", "re-check", 1)
    problems = [str(p) for p in data.get("problems") or []]
    return f"failed: {problems[0]}" if problems else "failed"


def _exception_tail(r: harness.WorkerResult, lines: int = 12) -> str:
    """The last lines of the exception: the worker's traceback, else stderr, else the error."""
    tb = str(r.data.get("traceback") or "").strip()
    text = tb or r.stderr_tail.strip() or r.error
    return "\n".join(text.splitlines()[-lines:])


def _failed(
    session: m.Session,
    variant: m.Variant,
    w: m.Workload,
    seeds: list[int],
    r: harness.WorkerResult,
    what: str,
) -> m.CorrectnessResult:
    return m.CorrectnessResult(
        session_id=session.id,
        variant_id=variant.id,
        workload=w.name,
        passed=False,
        trials=len(seeds),
        seeds=seeds,
        exit_code=r.exit_code,
        output_tail=f"{what}: {r.error}\n{r.output_tail}"[-65536:],
        device=str(r.data.get("device", "")),
        error=f"{what}: {r.error}\n{_exception_tail(r)}"[-8000:],
    )


def _result(
    session: m.Session,
    variant: m.Variant,
    w: m.Workload,
    seeds: list[int],
    r: harness.WorkerResult,
    paths: tuple[Path, Path],
) -> m.CorrectnessResult:
    data = r.data
    stats = [_error_stats(s) for s in data.get("stats", [])]
    problems = [str(p) for p in data.get("problems", [])]
    stress = [dict(x) for x in data.get("stress", []) if isinstance(x, dict)]
    failed_stress = [x for x in stress if not x.get("passed")]
    suggested, why = numerics.suggest_class(stats)
    if suggested in ("C1", "C2") and failed_stress:
        kinds = ", ".join(str(x["kind"]) for x in failed_stress)
        suggested, why = "C4", f"differs on the stress inputs ({kinds}): special values?"
    nondet = dict(data.get("nondeterminism") or {})
    if suggested in ("C1", "C2") and nondet.get("variant") and not nondet.get("baseline"):
        suggested, why = "C4", "nondeterministic: two calls on the same input differ"
    lines = [headline(data, stats), _summary(stats, problems)]
    for x in failed_stress:
        lines.append(
            f"stress trial {x['kind']}: {x.get('mismatches')} mismatches in "
            f"{', '.join(x.get('failed_outputs') or [])}; "
            f"NaN {x.get('nan_ref')}→{x.get('nan_new')}, Inf {x.get('inf_ref')}→{x.get('inf_new')}"
        )
    return m.CorrectnessResult(
        session_id=session.id,
        variant_id=variant.id,
        workload=w.name,
        passed=bool(data.get("passed")),
        trials=len(seeds),
        seeds=list(data.get("seeds") or seeds),
        exact=bool(stats) and all(s.bit_identical for s in stats),
        stats=stats,
        suggested_class=m.OptimizationClass(suggested) if suggested else None,
        class_reason=why,
        output_tail="\n".join(x for x in lines if x),
        exit_code=r.exit_code,
        device=str(data.get("device", "")),
        artifacts=[str(p) for p in paths],
        warnings=[str(x) for x in data.get("warnings", [])],
        options={
            **dict(data.get("options") or {}),
            **({"precision": data["precision"]} if data.get("precision") else {}),
        },
        stress=stress,
        nondeterminism=nondet,
    )


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _size_words(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def remove_saved_outputs(
    ledger: LedgerLike, session: m.Session, variants: list[m.Variant], *, keep: bool = False
) -> str:
    """At a round's end: the outputs its checks saved (the references and these variants'),
    removed unless kept, with their size in words. Profiles and traces stay. A later check
    of the same snapshots runs again rather than reusing a result whose outputs are gone."""
    root = artifacts_dir(ledger, session)
    folders = [root / "reference", *(root / v.id for v in variants)]
    found = [f for f in folders if f.is_dir()]
    size = sum(_tree_bytes(f) for f in found)
    if not found or not size:
        return ""
    if keep:
        return f"the checks' saved outputs are kept: {_size_words(size)} under {root}"
    for f in found:
        shutil.rmtree(f, ignore_errors=True)
    return (
        f"the checks' saved outputs were removed: {_size_words(size)} "
        "(keep them with --keep-outputs)"
    )


def audit_arm(ledger: LedgerLike, session: m.Session, arm: str, worktree: Path) -> list[m.Audit]:
    """Audit every torch workload of one arm ("baseline" or a variant id); store and return.

    Figures check_variant already measured in this worktree are used, not measured again.
    """
    audits = dict(_PREFETCHED.pop(_tree_key(session, arm, Path(worktree)), {}))
    order = [w.name for w in torch_workloads(session)]
    todo = [w for w in torch_workloads(session) if w.name not in audits]
    for group in _groups(todo):
        ran = _run(session, [_audit_job(w) for w in group], Path(worktree), group[0].env)
        for w, r in zip(group, ran, strict=True):
            audits[w.name] = _audit_from(session, arm, w, r)
    done = [audits[n] for n in order if n in audits]
    if done:
        ledger.put(*done)
    return done


def latest_audits(ledger: LedgerLike, session_id: str, arm: str) -> dict[str, m.Audit]:
    """The newest audit of each workload for one arm."""
    found: dict[str, m.Audit] = {}
    for a in ledger.list(m.Audit, session_id=session_id, arm=arm):
        found[a.workload] = a  # rowid order: the last one wins
    return found


def audit_deltas(baseline: m.Audit, variant: m.Audit) -> list[str]:
    """The variant's audit against the baseline's, in words: ["kernel count 7 → 1", …]."""
    if baseline.error or variant.error:
        return [f"audit failed: {(variant.error or baseline.error)}"]
    return numerics.audit_deltas(baseline, variant)


def variant_audit_deltas(
    ledger: LedgerLike, session_id: str, variant_id: str
) -> dict[str, list[str]]:
    """Per workload, the newest audit of a variant against the newest baseline audit."""
    base = latest_audits(ledger, session_id, "baseline")
    new = latest_audits(ledger, session_id, variant_id)
    return {w: audit_deltas(base[w], new[w]) for w in new if w in base}
