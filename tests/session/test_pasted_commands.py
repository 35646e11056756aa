"""Commands printed for people to paste run as meant, whatever the stored names hold.

A session whose repository path has spaces and shell syntax, whose variant name is
`v;touch${IFS}/tmp/...;#` and whose ids are hostile is rendered as a decision record;
every printed block is pasted into a real bash in a scratch folder. The commands must do
what they say (worktrees at the snapshots, gpuopt called with these exact words) and run
nothing else (no marker file appears).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import run_git

from ledger import Ledger
from measure.git import take_snapshot
from session import commands
from session import models as m
from session.record import build_export, to_markdown


def _blocks(md: str) -> list[str]:
    """The fenced shell blocks of the record's measurement plan."""
    plan = md.split("## Measurement plan", 1)[1]
    return [
        b.strip("\n")
        for b in re.findall(r"^(`{3,})sh\n(.*?)^\1$", plan, re.M | re.S)
        for b in [b[1]]
    ]


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    marker = Path(f"/tmp/gpuopt-pasted-{uuid.uuid4().hex}")
    evil = f";touch${{IFS}}{marker};#"
    repo = tmp_path / "my repo $(touch${IFS}pwned) `touch pwned`"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "src").mkdir()
    (repo / "src" / "value.txt").write_text("1.0\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "first")
    monkeypatch.setenv("GPUOPT_WORKTREES", str(tmp_path / "wt"))
    base = take_snapshot(repo)
    (repo / "src" / "value.txt").write_text("0.9\n")
    var = take_snapshot(repo)
    profile = tmp_path / "profile $(touch${IFS}pwned).txt"
    profile.write_text("profile\n")

    hooks = m.Hooks(setup="echo setup-ran", prepare="echo prepare-ran")
    contract = m.Contract(
        workloads=[
            m.Workload(
                name="w" + evil,
                command='echo "[$SIZE|$LAUNCHED]"; cat value.txt',
                env={"SIZE": "1 $(touch${IFS}pwned) 2"},
            ),
        ],
        check="echo check-ran",
        hooks=hooks,
        launcher="env LAUNCHED=yes",
    )
    sid = "s" + evil
    s = m.Session(id=sid, title="t", repo=str(repo / "src"), contract=contract)
    snap = m.Snapshot(id="snap" + evil, commit=base.commit, ref=base.ref, head=base.head)
    b = m.Baseline(
        id="b" + evil,
        session_id=sid,
        snapshot=snap,
        environment=m.EnvironmentFingerprint(),
        contract_hash=contract.stable_hash(),
        reference={"w" + evil: 1.0},
        reset_procedure=commands.reset_procedure(
            str(repo), snap.id, snap.commit, snap.ref, hooks, "src"
        ),
    )
    v = m.Variant(
        id="v" + evil,
        session_id=sid,
        name="v" + evil.replace(" ", ""),
        snapshot=m.Snapshot(id="vs" + evil, commit=var.commit, ref=var.ref),
    )
    e = m.Evidence(
        session_id=sid, kind=m.EvidenceKind.NOTE, title="p", path=str(profile),
        summary={"file": {"sha256": "00"}},
    )  # fmt: skip
    r = m.Round(
        id="r" + evil, session_id=sid, baseline_id=b.id, number=1, variant_ids=[v.id],
        status=m.RoundStatus.COMPLETED, blocks=10,
    )  # fmt: skip
    with Ledger.open(tmp_path / "l.db") as ledger:
        ledger.put(s, b, v, e, r)
        md = to_markdown(build_export(ledger, s))
    return {"md": md, "marker": marker, "repo": repo, "session": s, "baseline": b,
            "variant": v, "base": base, "var": var, "tmp": tmp_path}  # fmt: skip


def _paste(script: str, tmp: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """Paste script into bash in a fresh scratch folder; gpuopt is a recorder of its argv."""
    scratch = tmp / f"scratch-{uuid.uuid4().hex[:6]}"
    scratch.mkdir()
    shim = tmp / "bin"
    shim.mkdir(exist_ok=True)
    calls = tmp / "calls.jsonl"
    (shim / "gpuopt").write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    (shim / "gpuopt").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(scratch)}
    proc = subprocess.run(["bash", "-e"], input=script + "\n", cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    return proc, scratch, calls


def _no_marker(h: dict, *scratches: Path) -> None:
    assert not h["marker"].exists(), "a pasted command ran code from a stored name"
    for where in (h["tmp"], *scratches):
        assert not list(where.rglob("pwned")), "a pasted command ran code from the repo path"


def test_every_command_of_the_record_runs_as_meant(hostile):
    h = hostile
    blocks = _blocks(h["md"])
    assert len(blocks) == 4  # baseline, round, correctness of the variant, evidence
    sid = h["session"].id
    for block in blocks:
        calls = h["tmp"] / "calls.jsonl"
        calls.unlink(missing_ok=True)
        proc, scratch, calls = _paste(block, h["tmp"])
        assert proc.returncode == 0, (block, proc.stderr)
        _no_marker(h, scratch)
        words = [json.loads(x) for x in calls.read_text().splitlines()] if calls.exists() else []
        trees = [p for p in scratch.iterdir() if p.name.startswith("gpuopt-")]
        for tree in trees:  # each worktree holds the snapshot it names
            head = run_git(tree, "rev-parse", "HEAD").strip()
            assert head in (h["base"].commit, h["var"].commit)
        if "gpuopt baseline" in block:
            assert words == [["baseline", sid, "--runs", "10"]]
            assert "setup-ran" in proc.stdout and "prepare-ran" in proc.stdout
            assert "[1 $(touch${IFS}pwned) 2|yes]" in proc.stdout  # its environment, literally
            assert proc.stdout.strip().endswith("1.0")  # the workload ran in the snapshot's src/
            assert [run_git(t, "rev-parse", "HEAD").strip() for t in trees] == [h["base"].commit]
        elif "gpuopt round" in block:
            assert words[0][:4] == ["round", sid, "--variants", h["variant"].name]
            assert [run_git(t, "rev-parse", "HEAD").strip() for t in trees] == [h["var"].commit]
        elif "echo check-ran" in block:
            assert "check-ran" in proc.stdout
        else:
            assert "sha256sum" in block and len(proc.stdout.split()[0]) == 64


def test_the_reset_procedure_pastes_into_bash(hostile):
    h = hostile
    b = h["baseline"]
    proc, scratch, _ = _paste(b.reset_procedure, h["tmp"])
    assert proc.returncode == 0, (b.reset_procedure, proc.stderr)
    _no_marker(h, scratch)
    assert [x for x in proc.stdout.split() if x.endswith("-ran")] == ["setup-ran", "prepare-ran"]
    (tree,) = [p for p in scratch.iterdir() if p.name.startswith("gpuopt-")]
    assert run_git(tree, "rev-parse", "HEAD").strip() == b.snapshot.commit
    # every comment line stays one comment
    assert all(line.startswith("# ") or not line.startswith("#")
               for line in b.reset_procedure.splitlines())  # fmt: skip


def test_quoted_words_come_back_as_they_were():
    words = ["git", "-C", "/a b/$(x)", "it's", "v;touch${IFS}/tmp/x;#", "\n", ""]
    assert shlex.split(commands.command(*words)) == words
    assert "\n" not in commands.comment("a\nb\x1b]0;t\x07")
    assert commands.subdir_of("~no-such-user-here/x") == ""  # a foreign ledger's path


def test_conduct_builds_the_quoted_reset_procedure(hostile):
    from session import conduct

    h = hostile
    got = conduct.reset_procedure(h["session"], h["baseline"].snapshot)
    proc, scratch, _ = _paste(got, h["tmp"])
    assert proc.returncode == 0, proc.stderr
    _no_marker(h, scratch)
