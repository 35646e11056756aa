"""check_variant and audit_arm on a real repository: one baseline and one variant commit,
each in its own worktree, every scenario a workload of the same session (so one worker
process per side does all of them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch_scenarios import torch_repo_fixture  # noqa: F401  (the torch_repo fixture)

from ledger import Ledger
from measure import harness
from session import models as m
from session import torch_checks

# Every test here reads one module fixture that starts torch workers (25-35 s at load
# ~10, its cost lands on whichever test runs first): the whole module is slow.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checked(torch_repo, tmp_path_factory: pytest.TempPathFactory):
    ledger = Ledger.open(tmp_path_factory.mktemp("ledger") / "ledger.db")
    workloads = [m.Workload.parse(spec) for spec in torch_repo.workloads]
    for w in workloads:
        w.training = w.name == "s_train"
    session = m.Session(
        title="torch checks", repo=str(torch_repo.repo), contract=m.Contract(workloads=workloads)
    )
    snap = m.Snapshot(commit=torch_repo.variant_commit, ref="refs/gpuopt/snapshots/x")
    variant = m.Variant(session_id=session.id, name="all-changes", snapshot=snap)
    ledger.put(session, variant)
    processes: list[str] = []
    real = harness.run_jobs

    def counted(jobs, worktree, **kw):
        processes.append(f"{Path(worktree).name}: {sorted({j['mode'] for j in jobs})}")
        return real(jobs, worktree, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness, "run_jobs", counted)
        results = torch_checks.check_variant(
            ledger, session, variant, torch_repo.base_dir, torch_repo.variant_dir, trials=3, seed=11
        )
        base_audits = torch_checks.audit_arm(ledger, session, "baseline", torch_repo.base_dir)
        var_audits = torch_checks.audit_arm(ledger, session, variant.id, torch_repo.variant_dir)
    yield {
        "processes": processes,
        "names": {w.name for w in workloads},
        "ledger": ledger,
        "session": session,
        "variant": variant,
        "results": {r.workload: r for r in results},
        "base": {a.workload: a for a in base_audits},
        "new": {a.workload: a for a in var_audits},
    }
    ledger.close()


def _stat(result: m.CorrectnessResult, output: str) -> m.ErrorStats:
    return next(s for s in result.stats if s.output == output)


def test_every_torch_workload_gets_a_stored_result(checked) -> None:
    ledger, session = checked["ledger"], checked["session"]
    stored = ledger.list(m.CorrectnessResult, session_id=session.id)
    assert {r.workload for r in stored} == checked["names"]
    for r in stored:
        assert r.trials == 3 and r.seeds == [11, 12, 13]
    # Tensors stay out of SQLite: saved beside the ledger.
    fast = checked["results"]["s_fast"]
    assert len(fast.artifacts) == 2 and all(
        (Path(a) / "index.json").is_file() for a in fast.artifacts
    )
    assert Path(fast.artifacts[0]).is_relative_to(Path(ledger.path).parent)


def test_naive_softmax_to_torch_softmax_passes_and_ops_drop(checked) -> None:
    r = checked["results"]["s_fast"]
    assert r.passed, r.output_tail
    s = _stat(r, "out")
    assert s.shape_equal and s.dtype_equal and s.mismatches == 0
    assert s.max_abs is not None and s.max_abs < 1e-5 and s.atol == 1e-5 and s.rtol == 1.3e-6
    assert r.suggested_class in (m.OptimizationClass.C1, m.OptimizationClass.C2)
    base, new = checked["base"]["s_fast"], checked["new"]["s_fast"]
    assert base.operator_count == 5 and new.operator_count == 1
    assert [o["name"] for o in new.top_ops] == ["aten::softmax"]
    words = torch_checks.audit_deltas(base, new)
    assert "kernel count 5 → 1" in words and "operators 5 → 1" in words
    assert any(w.startswith("peak") for w in words)


def test_softmax_without_max_subtraction_fails_with_nan_counts(checked) -> None:
    r = checked["results"]["s_nomax"]
    assert not r.passed
    s = _stat(r, "out")
    assert s.nan_ref == 0 and s.inf_ref == 0
    assert s.nan_new > 0
    assert not s.nonfinite_positions_match
    assert s.mismatches >= s.nan_new
    assert r.suggested_class is m.OptimizationClass.C4
    assert "NaN" in r.output_tail


def test_off_by_one_mask_fails_at_the_boundary(checked) -> None:
    r = checked["results"]["s_mask"]
    assert not r.passed
    s = _stat(r, "out")
    lengths = [10, 30, 50]
    assert s.mismatches == 3 * 3  # one element per row, three trials
    row, col = s.worst_index
    assert col == lengths[row]  # the first column the mask should have dropped
    assert s.worst_ref == 0.0 and s.worst_new is not None and s.worst_new >= 1.0
    assert s.worst_trial in (0, 1, 2) and s.worst_seed == 11 + s.worst_trial
    assert r.suggested_class is m.OptimizationClass.C4  # local: a boundary


def test_bit_identical_refactor_is_an_exact_pass(checked) -> None:
    r = checked["results"]["s_refactor"]
    assert r.passed and r.exact
    s = _stat(r, "out")
    assert s.bit_identical and s.max_abs == 0.0 and s.ulp_max == 0.0
    assert r.suggested_class is m.OptimizationClass.C1


def test_fp32_to_bf16_is_flagged_c3(checked) -> None:
    r = checked["results"]["s_bf16"]
    s = _stat(r, "out")
    assert not s.dtype_equal and (s.ref_dtype, s.new_dtype) == ("float32", "bfloat16")
    # the reference dtype's tolerance, never the candidate's coarser one (issue 20), and a
    # precision change without a tolerance declared in the contract fails
    assert s.rtol == 1.3e-6 and not r.passed
    assert r.suggested_class is m.OptimizationClass.C3
    assert "float32→bfloat16" in r.class_reason


def test_modelnew_is_used_and_matches(checked) -> None:
    r = checked["results"]["kb"]
    assert r.passed, r.output_tail
    assert _stat(r, "out").max_abs is not None
    base, new = checked["base"]["kb"], checked["new"]["kb"]
    assert any(n.endswith(":Model") for n in base.notes)
    assert any(n.endswith(":ModelNew") for n in new.notes)
    assert "aten::addmm" in {o["name"] for o in new.top_ops}
    assert "aten::addmm" not in {o["name"] for o in base.top_ops}


def test_gradient_mismatch_on_a_training_path(checked) -> None:
    r = checked["results"]["s_train"]
    assert not r.passed
    assert _stat(r, "out").bit_identical  # the forward is unchanged
    g = _stat(r, "grad:param:w")
    assert g.mismatches > 0 and g.max_abs is not None and g.max_abs > 1e-3
    assert "grad:param:w" in r.output_tail


def test_a_variant_that_fails_to_import_fails_the_check(checked) -> None:
    r = checked["results"]["s_broken"]
    assert not r.passed and r.stats == []
    assert "half-finished edit" in r.output_tail and "the variant failed" in r.output_tail


def test_audits_are_stored_per_arm(checked) -> None:
    ledger, session, variant = checked["ledger"], checked["session"], checked["variant"]
    base = torch_checks.latest_audits(ledger, session.id, "baseline")
    new = torch_checks.latest_audits(ledger, session.id, variant.id)
    assert set(base) == set(new) == checked["names"]
    for a in base.values():
        assert a.error == "" and a.device == "cpu" and a.dtype == "float32"
        assert a.peak_bytes is None or a.peak_bytes > 0
        assert a.allocation_count is not None and a.allocation_count >= 1
    assert "half-finished edit" in new["s_broken"].error
    assert new["s_broken"].kernel_launches is None
    deltas = torch_checks.variant_audit_deltas(ledger, session.id, variant.id)
    assert deltas["s_broken"][0].startswith("audit failed")
    # training path: the backward is in the audit
    train = base["s_train"]
    assert train.operator_count is not None and train.operator_count >= 3


def test_one_worker_process_per_side(checked) -> None:
    """Outputs and audits of all workloads: one process in each worktree, none afterwards."""
    assert checked["processes"] == [
        "wt-base: ['audit', 'outputs']",
        "wt-variant: ['audit', 'outputs']",
    ]
