"""The shipped adversarial set: every cheating candidate of tests/torch/cheats fails the
check (or, for a redefined get_inputs(), is refused by the keep-default gate) with words
that name its trick; the honest candidates of tests/torch/honest still pass.

One check_variant call runs them all: one worker process per side (the worker puts back
what a candidate patched before the next job of the batch).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from torch_scenarios import git, write

from ledger import Ledger
from session import gates, torch_checks
from session import models as m

HERE = Path(__file__).parent
MARK = "# --- candidate ---"
CHEATS = sorted(p for p in (HERE / "cheats").glob("*.py") if p.name != "__init__.py")
HONEST = sorted(p for p in (HERE / "honest").glob("*.py") if p.name != "__init__.py")


def trick(path: Path) -> str:
    """The words the check must say about this cheat (its TRICK constant)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "TRICK":
            return str(ast.literal_eval(node.value))
    raise AssertionError(f"{path.name} has no TRICK")


def reference_part(text: str) -> str:
    head, sep, _ = text.partition(MARK)
    assert sep, "a candidate file has the reference above the candidate mark"
    return head.rstrip() + "\n"


@dataclass
class Checked:
    results: dict[str, m.CorrectnessResult]
    base_dir: Path
    variant_dir: Path


def _check(tmp: Path, files: list[Path]) -> Checked:
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {f"problems/{p.name}": reference_part(p.read_text()) for p in files})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "references")
    base = git(repo, "rev-parse", "HEAD")
    write(repo, {f"problems/{p.name}": p.read_text() for p in files})
    git(repo, "commit", "-q", "-am", "candidates")
    variant = git(repo, "rev-parse", "HEAD")
    base_dir, variant_dir = tmp / "wt-base", tmp / "wt-variant"
    git(repo, "worktree", "add", "-q", "--detach", str(base_dir), base)
    git(repo, "worktree", "add", "-q", "--detach", str(variant_dir), variant)
    ledger = Ledger.open(tmp / "ledger.db")
    workloads = [m.Workload.parse(f"{p.stem}=kernelbench:problems/{p.name}") for p in files]
    session = m.Session(title="cheats", repo=str(repo), contract=m.Contract(workloads=workloads))
    snap = m.Snapshot(commit=variant, ref="refs/gpuopt/snapshots/cheats")
    v = m.Variant(session_id=session.id, name="candidates", snapshot=snap)
    ledger.put(session, v)
    found = torch_checks.check_variant(
        ledger, session, v, base_dir, variant_dir, prefetch_audits=False
    )
    ledger.close()
    return Checked({r.workload: r for r in found}, base_dir, variant_dir)


@pytest.fixture(scope="module")
def cheats(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    return _check(tmp_path_factory.mktemp("cheats"), CHEATS)


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    return _check(tmp_path_factory.mktemp("honest"), HONEST)


def _words(r: m.CorrectnessResult) -> str:
    return "\n".join([r.output_tail, r.error, *r.warnings])


def test_the_set_has_at_least_fifteen_cheats() -> None:
    assert len(CHEATS) >= 15
    assert {p.stem for p in CHEATS} >= {
        "cached_output", "own_inputs", "half_output", "flaky_random", "timer_patch",
        "cuda_timer_patch", "side_thread", "side_stream", "freed_memory",
        "fallback_reference", "calls_reference", "input_view",
    }  # fmt: skip


@pytest.mark.slow
def test_no_cheat_passes_and_each_failure_names_its_trick(cheats: Checked) -> None:
    passed, unnamed = [], []
    for path in CHEATS:
        r = cheats.results[path.stem]
        words = _words(r)
        refused = gates.own_inputs_refusals([r], m.Disposition(
            session_id=r.session_id, variant_id=r.variant_id,
            choice=m.DispositionChoice.KEEP_DEFAULT,
        ))  # fmt: skip
        if r.passed and not refused:
            passed.append(path.stem)
        if trick(path) not in words + "\n".join(refused):
            unnamed.append(f"{path.stem}: {trick(path)!r} not in {words[:600]!r}")
    assert passed == [], f"cheats that pass: {passed}"
    assert unnamed == []


@pytest.mark.slow
def test_each_failure_headline_names_the_trial_and_the_biggest_error(cheats: Checked) -> None:
    ln = cheats.results["no_affine_layernorm"]
    assert ln.output_tail.startswith("failed on seed ")
    assert "max abs" in ln.output_tail.splitlines()[0]
    bf16 = cheats.results["maxless_softmax"]
    assert bf16.output_tail.startswith("failed on stress ×100")
    flaky = cheats.results["flaky_random"]
    head = flaky.output_tail.splitlines()[0]
    # whichever trial met a wrong call first: a seed's, a stress trial's, the repeat call…
    assert head.startswith("failed on ") and ("max abs" in head or "differs" in head)
    half = cheats.results["half_output"].output_tail.splitlines()[0]
    assert half.startswith("failed on seed ") and "float16, the reference's is float32" in half


@pytest.mark.slow
def test_a_redefined_get_inputs_is_refused_until_accepted_with_a_reason(cheats: Checked) -> None:
    r = cheats.results["own_inputs"]
    assert any("redefines get_inputs()" in w for w in r.warnings)
    d = m.Disposition(
        session_id=r.session_id, variant_id=r.variant_id, choice=m.DispositionChoice.KEEP_DEFAULT
    )
    assert gates.own_inputs_refusals([r], d)
    d.accepted_semantics, d.reason = True, "the smaller inputs are the production shape"
    assert gates.own_inputs_refusals([r], d) == []


@pytest.mark.slow
def test_the_flaky_check_makes_enough_calls_for_99_percent(cheats: Checked) -> None:
    r = cheats.results["flaky_random"]
    # 17 timed calls, each re-checked against the reference: 1 - 0.75^17 = 0.9925
    assert r.options["timed_recheck"].endswith("probability 0.9925 in 17 calls")
    assert r.options["repeat_calls"] >= 5  # and a repeat call per trial besides


@pytest.mark.slow
def test_honest_candidates_still_pass(honest: Checked) -> None:
    for path in HONEST:
        r = honest.results[path.stem]
        assert r.passed, f"{path.stem}: {r.output_tail} {r.error}"
        assert not r.warnings, r.warnings
    assert honest.results["identical"].exact
