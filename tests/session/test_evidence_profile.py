"""A profile stored as evidence: one line that says what it holds."""

from __future__ import annotations

from method_factory import make_session, open_ledger

from session import evidence as ev
from session import models as m
from session.profile.base import PROFILE_SOURCE
from session.profile.run import latest_profiles


def test_profile_evidence_is_described_and_found(tmp_path):
    with open_ledger(tmp_path) as ledger:
        s = make_session(ledger)
        summary = {
            "profile_version": 1, "source": PROFILE_SOURCE, "arm": "baseline", "workload": "e2e",
            "launches": 5, "dominant": {"name": "aten::exp", "share": 0.58},
            "largest_intermediate": {"bytes": 524288}, "roofline": {"suggested": "memory-bound"},
        }  # fmt: skip
        e = ev.add_profile(ledger, s, summary, title="profile of e2e (baseline)")
        assert e.kind is m.EvidenceKind.TORCH_PROFILE
        line = ev.describe(e)
        assert line == (
            "5 launch(es) per step; dominant aten::exp 58%; largest intermediate 512 KiB; "
            "suggests memory-bound"
        )
        assert latest_profiles(ledger, s.id, "baseline")["e2e"].id == e.id
        assert latest_profiles(ledger, s.id, "other") == {}


def test_shell_workloads_say_what_is_missing(tmp_path, monkeypatch):
    from session.profile.run import shell_advice

    monkeypatch.setenv("PATH", str(tmp_path))  # neither nsys nor ncu here
    w = m.Workload(name="bench", command="python bench.py")
    [line] = shell_advice([w])
    assert line.startswith("bench: shell workload(s): neither Nsight Systems (nsys) nor")
    assert "gpuopt evidence add SESSION --ncu-csv FILE" in line
    (tmp_path / "nsys").write_text("#!/bin/sh\n")
    (tmp_path / "nsys").chmod(0o755)
    lines = shell_advice([w])
    assert lines[1].startswith("  nsys profile") and "ncu --csv --page raw" in lines[3]
