"""`gpuopt bisect` on real git histories made here, run as the command line in subprocesses.

Each commit holds `dur`, the seconds its workload sleeps (`read d < dur; sleep $d`: a
shell builtin and coreutils' sleep, so no interpreter start-up adds noise); a step change
is a longer sleep from one commit on. The person's tree must stay exactly as it was.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_git
from test_repo_untouched import assert_untouched, state

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = "read d < dur; sleep $d"
# Sleeps of 50 ms: the noise of starting a process on a loaded box is milliseconds, so a
# longer run is decided in fewer blocks (fewer seconds in all) than a 20 ms one.
BASE, START = 0.050, 0.005  # the sleep, and about what starting bash and sleep adds


def sleep_for(level: float) -> float:
    """The sleep whose wall time is `level` times the first commit's."""
    return round((BASE + START) * level - START, 4)


def steps(n: int, at: dict[int, float]) -> list[float]:
    """Sleeps for n commits with a step change of `at[i]` (e.g. 0.3) from commit i on."""
    level, out = 1.0, []
    for i in range(n):
        level *= 1 + at.get(i, 0.0)
        out.append(sleep_for(level))
    return out


def history(tmp_path: Path, durations: list[float], broken: int | None = None) -> Path:
    """One commit per duration, the first on `main`; `broken`: that commit fails to build."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    for i, d in enumerate(durations):
        (repo / "dur").write_text(f"{d}\n")
        (repo / "n").write_text(f"{i}\n")
        (repo / "broken").unlink(missing_ok=True)
        if i == broken:
            (repo / "broken").write_text("x\n")
        run_git(repo, "add", "-A")
        run_git(repo, "commit", "-q", "-m", f"commit {i}: sleep {d}")
    (repo / "notes.txt").write_text("untracked, and must stay\n")
    return repo


def env_of(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["GPUOPT_WORKTREES"] = str(tmp_path / "worktrees")
    return env


# Headroom for a loaded machine: a round stops at its first deciding look, usually far sooner.
ROOM = ("--max-blocks", "80")


def bisect(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    room = ROOM if "--resume" not in args and "--show" not in args else ()
    return subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(tmp_path / "l.db"), "bisect", *room, *args],
        cwd=ROOT,
        env=env_of(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )


def stored(tmp_path: Path) -> list[dict]:
    with sqlite3.connect(tmp_path / "l.db") as conn:
        return [json.loads(r[0]) for r in conn.execute("SELECT data FROM bisections")]


def culprits(record: dict) -> list[list[int]]:
    return [c["candidates"] for c in record["answer"]["changes"]]


def no_worktrees_left(tmp_path: Path, repo: Path) -> bool:
    base = tmp_path / "worktrees"
    listed = run_git(repo, "worktree", "list", "--porcelain").count("worktree ")
    return listed == 1 and (not base.exists() or not any(base.iterdir()))


@pytest.mark.slow
def test_a_30_percent_step_at_19_of_32_is_found_and_the_tree_is_untouched(
    tmp_path: Path,
) -> None:
    repo = history(tmp_path, steps(32, {19: 0.3}))
    before = state(repo)
    head = len(run_git(repo, "rev-list", "HEAD").split()) - 1
    out = bisect(tmp_path, "--repo", str(repo), "--good", f"HEAD~{head}", "--bad", "HEAD",
                 "--export-markdown", str(tmp_path / "b.md"), "--", WORKLOAD)  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    (record,) = stored(tmp_path)
    assert culprits(record) == [[19]]
    assert record["status"] == "completed"
    assert f"commit 19: sleep {sleep_for(1.3)}" in out.stdout
    rounds = sum(1 for s in record["steps"] if s["runs"])
    assert rounds <= 1 + 5 + 2  # the confirm round, log2(30) steps, two undecided at most
    assert "spent" in out.stdout and "forecast" in out.stdout
    md = (tmp_path / "b.md").read_text()
    assert "## Change at" in md and f"commit 19: sleep {sleep_for(1.3)}" in md and "dur |" in md
    assert_untouched(repo, before)
    assert no_worktrees_left(tmp_path, repo)


@pytest.mark.slow
def test_two_steps_are_both_found(tmp_path: Path) -> None:
    # 12 commits, a step in each half (6 rounds; 32 commits took 10): the depth of a long
    # history is the 19-of-32 test's
    repo = history(tmp_path, steps(12, {3: 0.2, 9: 0.2}))
    out = bisect(tmp_path, "--repo", str(repo), "--good", "main~11", "--bad", "main",
                 "--", WORKLOAD)  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    (record,) = stored(tmp_path)
    assert culprits(record) == [[3], [9]]
    assert "2 changes over the band" in out.stdout
    sizes = [c["evidence"]["ratio"] for c in record["answer"]["changes"]]
    assert all(1.1 < r < 1.35 for r in sizes), sizes


@pytest.mark.slow
def test_an_a_a_history_has_no_difference(tmp_path: Path) -> None:
    repo = history(tmp_path, steps(8, {}))
    # ±10%: a band a loaded 2-core box can show two equal commits within (±5% may take
    # more blocks than it allows, and is then said undecided, never a difference)
    out = bisect(tmp_path, "--repo", str(repo), "--good", "main~7", "--bad", "main",
                 "--threshold", "10%", "--", WORKLOAD)  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    assert "no difference between good and bad" in out.stdout
    assert "rules out a change larger than" in out.stdout
    (record,) = stored(tmp_path)
    assert record["answer"]["kind"] == "no difference" and len(record["steps"]) == 1


@pytest.mark.slow
def test_a_commit_that_fails_to_build_next_to_the_culprit_is_skipped_and_named(
    tmp_path: Path,
) -> None:
    repo = history(tmp_path, steps(8, {5: 0.3}), broken=4)  # 4 rounds (12 commits: 5)
    out = bisect(tmp_path, "--repo", str(repo), "--good", "main~7", "--bad", "main",
                 "--setup", "test ! -e broken", "--", WORKLOAD)  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    (record,) = stored(tmp_path)
    assert culprits(record) == [[4, 5]]
    assert record["answer"]["skipped"] == {"4": "failed to build (exit 1)"}
    assert record["answer"]["changes"][0]["skipped_borders"] == [4]
    assert "skipped commit #4" in out.stdout and "borders it" in out.stdout


@pytest.mark.slow
def test_ctrl_c_then_resume_gives_the_same_answer(tmp_path: Path) -> None:
    # 8 commits: the confirm round and 3 steps, so the resume has 2 rounds still to run
    repo = history(tmp_path, steps(8, {5: 0.3}))
    before = state(repo)
    cmd = [sys.executable, "-m", "tui", "--ledger", str(tmp_path / "l.db"), "bisect", *ROOM,
           "--repo", str(repo), "--good", "main~7", "--bad", "main", "--", WORKLOAD]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env_of(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # the second round's line: the confirm round and a step are stored
        seen.append(line)
        if line.startswith("round 2:"):
            break
    else:
        pytest.fail(
            "no second round: " + "".join(seen) + (proc.stderr.read() if proc.stderr else "")
        )
    proc.send_signal(signal.SIGINT)
    _rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    (record,) = stored(tmp_path)
    assert record["status"] == "interrupted"
    kept = [s["number"] for s in record["steps"] if s["side"] != "interrupted"]
    assert kept[:2] == [1, 2]
    assert no_worktrees_left(tmp_path, repo)

    again = bisect(tmp_path, "--resume", record["id"][:8])
    assert again.returncode == 0, again.stderr + again.stdout
    (done,) = stored(tmp_path)
    assert done["status"] == "completed"
    assert culprits(done) == [[5]]
    assert [s["number"] for s in done["steps"]][: len(kept)] == kept  # the old steps kept
    assert len(done["steps"]) > len(kept)  # the resume ran rounds of its own
    assert_untouched(repo, before)
    shown = bisect(tmp_path, "--show", record["id"][:8])
    assert shown.returncode == 0 and "#5" in shown.stdout and "ratio to good" in shown.stdout


def gpuopt(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", "--ledger", str(tmp_path / "l.db"), *args],
        cwd=ROOT, env=env_of(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.slow
def test_on_a_sessions_contract_a_commit_failing_its_check_is_skipped(tmp_path: Path) -> None:
    repo = history(tmp_path, steps(8, {4: 0.3}), broken=3)
    new = gpuopt(tmp_path, "new", "--repo", str(repo), "--title", "slow since when",
                 "--workload", f"sleepy={WORKLOAD}", "--check", "test ! -e broken",
                 "--threshold", "0.1")  # fmt: skip
    assert new.returncode == 0, new.stderr
    out = bisect(tmp_path, "--session", new.stdout.strip(), "--good", "main~7", "--bad", "main")
    assert out.returncode == 0, out.stderr + out.stdout
    assert "at ±10%" in out.stdout  # the contract's band
    (record,) = stored(tmp_path)
    assert record["session_id"] == new.stdout.strip()
    assert record["answer"]["skipped"] == {"3": "failed its correctness check (exit 1)"}
    assert culprits(record) == [[3, 4]]
    assert "skipped commit #3" in out.stdout and "borders it" in out.stdout


@pytest.mark.slow
def test_sighup_stops_after_the_current_run_and_keeps_the_record(tmp_path: Path) -> None:
    repo = history(tmp_path, steps(8, {6: 0.3}))
    cmd = [sys.executable, "-m", "tui", "--ledger", str(tmp_path / "l.db"), "bisect",
           "--repo", str(repo), "--good", "main~7", "--bad", "main", "--", WORKLOAD]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env_of(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:  # the confirm round is stored once its line is out
        if line.startswith("round 1:"):
            break
    proc.send_signal(signal.SIGHUP)
    _out, err = proc.communicate(timeout=120)
    (record,) = stored(tmp_path)
    assert proc.returncode == 129, err  # a round takes 30 runs at least: it came in one
    assert record["status"] == "interrupted"
    assert record["steps"][0]["kind"] == "confirm" and record["steps"][0]["side"] is None
    assert no_worktrees_left(tmp_path, repo)


@pytest.mark.slow
def test_a_good_end_that_fails_to_build_stops_the_bisection_and_says_so(tmp_path: Path) -> None:
    repo = history(tmp_path, steps(3, {2: 0.3}), broken=0)
    out = bisect(tmp_path, "--repo", str(repo), "--good", "main~2", "--bad", "main",
                 "--setup", "test ! -e broken", "--", WORKLOAD)  # fmt: skip
    assert out.returncode == 1
    assert "the good end #0" in out.stderr and "failed to build (exit 1)" in out.stderr
    (record,) = stored(tmp_path)
    assert record["status"] == "failed" and "good end" in record["error"]
    assert no_worktrees_left(tmp_path, repo)
    listed = bisect(tmp_path, "--show")
    assert (
        listed.returncode == 0 and record["id"][:12] in listed.stdout and "failed" in listed.stdout
    )


def test_bad_usage_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.cli import main

    monkeypatch.setenv("GPUOPT_WORKTREES", str(tmp_path / "worktrees"))
    repo = history(tmp_path, steps(2, {}))
    led = ["--ledger", str(tmp_path / "l.db"), "bisect"]
    cases = [
        (["--repo", str(repo), "--good", "main~1", "--", WORKLOAD], "--good REF and --bad REF"),
        (["--repo", str(repo), "--good", "main", "--bad", "main", "--", WORKLOAD], "same commit"),
        (["--resume", "nosuch"], "no bisection 'nosuch'"),
        (["--repo", str(repo), "--good", "main~1", "--bad", "main"], "after --"),
        (["--session", "x", "--check", "true", "--good", "a", "--bad", "b"], "the session's"),
    ]
    for args, words in cases:
        assert main([*led, *args]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
