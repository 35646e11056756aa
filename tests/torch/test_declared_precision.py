"""A float16 output (tests/torch/cheats/half_output.py) fails at the reference dtype's
tolerance, and passes only where the contract declares one (GPUOPT_TORCH_TOLERANCE): the
check's headline and the verdict's words then say "at float16" (issue 20, build 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cheats import HERE, reference_part
from torch_scenarios import git, write

from ledger import Ledger
from session import models as m
from session import torch_checks
from session.verdicts import shown_verdict


def _checked(tmp: Path, env: dict[str, str]) -> m.CorrectnessResult:
    text = (HERE / "cheats" / "half_output.py").read_text()
    repo = tmp / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"problems/half.py": reference_part(text)})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "reference")
    base = git(repo, "rev-parse", "HEAD")
    write(repo, {"problems/half.py": text})
    git(repo, "commit", "-q", "-am", "float16")
    variant = git(repo, "rev-parse", "HEAD")
    base_dir, variant_dir = tmp / "wt-base", tmp / "wt-variant"
    git(repo, "worktree", "add", "-q", "--detach", str(base_dir), base)
    git(repo, "worktree", "add", "-q", "--detach", str(variant_dir), variant)
    w = m.Workload.parse("half=kernelbench:problems/half.py")
    w.env = env
    with Ledger.open(tmp / "ledger.db") as ledger:
        session = m.Session(title="fp16", repo=str(repo), contract=m.Contract(workloads=[w]))
        v = m.Variant(
            session_id=session.id,
            name="half",
            snapshot=m.Snapshot(commit=variant, ref="refs/gpuopt/snapshots/half"),
        )
        ledger.put(session, v)
        (r,) = torch_checks.check_variant(
            ledger, session, v, base_dir, variant_dir, prefetch_audits=False
        )
    return r


@pytest.mark.slow
def test_float16_fails_unless_declared_and_then_reads_at_float16(tmp_path: Path) -> None:
    undeclared = _checked(tmp_path / "a", {})
    assert not undeclared.passed
    assert "dtype float16, the reference's is float32" in undeclared.output_tail.splitlines()[0]
    declared = _checked(tmp_path / "b", {torch_checks.TOLERANCE_ENV: "1e-3,1e-3"})
    assert declared.passed, declared.output_tail
    assert declared.options.get("precision") == "at float16"
    assert declared.output_tail.splitlines()[0] == "passed at float16"
    c = m.Comparison(round_id="r", variant_id=declared.variant_id, workload="half", n=10,
                     ratio=0.5, verdict=m.Verdict.FASTER)  # fmt: skip
    assert shown_verdict(c, [declared]).text == "FASTER at float16"
    other = c.model_copy(update={"variant_id": undeclared.variant_id})
    assert shown_verdict(other, [undeclared]).word == "BROKEN"
