"""A check a candidate cannot game: each problem of adversarial_problems.py has a candidate
that a bare allclose on the file's own randn inputs and init weights lets through. One
check_variant call runs them all (one worker process per side), then once more to show the
cache; the exports carry what the check did, warned of and failed on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adversarial_problems import WORKLOADS, problem_repo_fixture  # noqa: F401  (the fixture)

from ledger import Ledger
from measure import harness
from session import models as m
from session import torch_checks
from session.record import build_export, to_markdown

# Every test here reads one module fixture that starts torch workers (25-35 s at load
# ~10, its cost lands on whichever test runs first): the whole module is slow.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checked(problem_repo, tmp_path_factory: pytest.TempPathFactory):
    ledger = Ledger.open(tmp_path_factory.mktemp("ledger") / "ledger.db")
    workloads = [m.Workload.parse(spec) for spec in WORKLOADS]
    for w in workloads:
        w.training = w.name == "bias"
    session = m.Session(
        title="adversarial", repo=str(problem_repo.repo), contract=m.Contract(workloads=workloads)
    )
    snap = m.Snapshot(commit=problem_repo.variant_commit, ref="refs/gpuopt/snapshots/adv")
    variant = m.Variant(session_id=session.id, name="candidates", snapshot=snap)
    ledger.put(session, variant)
    first = torch_checks.check_variant(
        ledger, session, variant, problem_repo.base_dir, problem_repo.variant_dir
    )
    audits = {
        arm: {a.workload: a for a in torch_checks.audit_arm(ledger, session, arm, tree)}
        for arm, tree in (
            ("baseline", problem_repo.base_dir),
            (variant.id, problem_repo.variant_dir),
        )
    }
    processes: list[str] = []
    real = harness.run_jobs

    def counted(jobs, worktree, **kw):
        processes.append(str(worktree))
        return real(jobs, worktree, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness, "run_jobs", counted)
        again = torch_checks.check_variant(
            ledger, session, variant, problem_repo.base_dir, problem_repo.variant_dir
        )
    data = build_export(ledger, session)
    yield {
        "results": {r.workload: r for r in first},
        "again": {r.workload: r for r in again},
        "again_processes": processes,
        "audits": audits,
        "variant": variant,
        "json": json.loads(json.dumps(data, default=str)),
        "md": to_markdown(data),
    }
    ledger.close()


def test_dropped_affine_layernorm_fails_after_random_reinit(checked) -> None:
    r = checked["results"]["layernorm"]
    # weight 1 and bias 0 at construction made it bit-identical; random values do not
    assert not r.passed and not r.exact
    assert r.stats[0].mismatches > 0
    assert "re-initialised at random" in r.options["reinit"]


def test_softmax_without_max_fails_on_the_stress_inputs_only(checked) -> None:
    r = checked["results"]["softmax"]
    assert not r.passed
    main = r.stats[0]
    assert main.mismatches == 0  # randn inputs: within tolerance, as a bare allclose says
    stress = {x["kind"]: x for x in r.stress}
    assert set(stress) == {"x100", "x1e-3", "zeros", "nan_inf"}
    assert not stress["x100"]["passed"] and stress["x100"]["nan_new"] > 0
    assert stress["x100"]["nan_ref"] == 0
    assert stress["zeros"]["passed"] and stress["x1e-3"]["passed"]
    assert not stress["nan_inf"]["nonfinite_positions_match"]  # NaN/Inf propagate otherwise
    assert r.suggested_class is m.OptimizationClass.C4
    assert "stress" in r.class_reason


def test_flaky_kernel_fails_and_is_called_nondeterministic(checked) -> None:
    r = checked["results"]["flaky"]
    assert not r.passed
    assert r.nondeterminism["variant"].get("out", 0) >= 1
    assert not r.nondeterminism["baseline"]
    assert "nondeterministic" in r.output_tail


def test_a_candidate_that_changes_get_inputs_is_warned_about_and_fails(checked) -> None:
    r = checked["results"]["inputs"]
    assert any("redefines get_inputs()" in w for w in r.warnings)
    assert not any("get_init_inputs" in w for w in r.warnings)  # the same code: no warning
    # The reference's randn inputs drove both sides: identity is not sin.
    assert not r.passed and r.stats[0].mismatches > 0
    assert r.options["inputs"].startswith("the reference's")


def test_a_candidate_that_raises_fails_with_its_exception(checked) -> None:
    r = checked["results"]["raiser"]
    assert not r.passed
    assert "illegal instruction at tile 3" in r.error
    assert "Traceback" in r.error or "RuntimeError" in r.error


def test_a_gradient_that_is_none_is_said_as_such(checked) -> None:
    r = checked["results"]["bias"]
    assert not r.passed
    gone = [s for s in r.stats if s.none_on]
    assert [(s.output, s.none_on) for s in gone] == [("grad:param:lin.bias", "variant")]
    assert "is None on the variant side" in r.output_tail
    assert "shape [] → []" not in r.output_tail


def test_identical_code_passes_bit_identical_and_its_audit_shows_no_difference(checked) -> None:
    r = checked["results"]["control"]
    assert r.passed and r.exact and r.suggested_class is m.OptimizationClass.C1
    assert r.trials == 5  # not close: no extra trials
    base = checked["audits"]["baseline"]["control"]
    new = checked["audits"][checked["variant"].id]["control"]
    assert base.allocated_bytes and base.allocated_bytes == new.allocated_bytes
    assert base.peak_bytes and base.peak_bytes == new.peak_bytes
    # the step's own peak, a few KiB, not the process's hundreds of MiB with torch in it
    assert base.peak_bytes < 1 << 20 and "step peak" in base.peak_source
    words = torch_checks.audit_deltas(base, new)
    assert "peak unchanged" in words and "allocated per call unchanged" in words


def test_results_are_cached_per_snapshots_seeds_and_tolerance(checked) -> None:
    assert checked["again_processes"] == []  # nothing ran again
    for name, r in checked["results"].items():
        assert checked["again"][name].id == r.id and r.cache_key
    ok = checked["results"]["control"]
    assert ok.artifact_bytes and ok.artifact_bytes > 0
    assert all((Path(a) / "index.json").is_file() for a in ok.artifacts)


def test_exports_carry_exceptions_warnings_and_options(checked) -> None:
    md, data = checked["md"], checked["json"]
    assert "illegal instruction at tile 3" in md
    assert "redefines get_inputs()" in md
    assert "stress x100" in md and "FAILED" in md
    assert "repeat check" in md and "re-initialised at random" in md
    assert "nondeterministic (variant)" in md
    by = {c["workload"]: c for c in data["correctness"]}
    assert "illegal instruction at tile 3" in by["raiser"]["error"]
    assert by["inputs"]["warnings"] and by["softmax"]["stress"]
    assert by["control"]["options"]["repeat_check"] is True
    assert by["flaky"]["nondeterminism"]["variant"]
    assert data["workloads"][0]["metric"] == (
        "time per call (ms), median of the calls after warm-up"
    )
    assert "figure per workload" in md
