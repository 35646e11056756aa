"""Git corners of snapshots and worktrees: the person's hooks, index bits that hide edits,
nested repositories, filters, a ledger inside the tree, and refs left by a failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import run_git

from measure import git as g
from measure import worktrees as w


def _hook(repo: Path, name: str, marker: Path) -> None:
    hook = repo / ".git" / "hooks" / name
    hook.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("name", ["post-index-change", "reference-transaction"])
def test_no_hook_of_the_person_runs_during_a_snapshot(make_repo, tmp_path, name):
    repo = make_repo(files={"a.py": "a = 1\n"})
    marker = tmp_path / f"{name}.ran"
    _hook(repo, name, marker)
    run_git(repo, "update-ref", "refs/heads/probe", "HEAD")  # the hook itself works
    run_git(repo, "add", "a.py")
    assert marker.exists() or name == "post-index-change"  # (no index change: no call)
    marker.unlink(missing_ok=True)
    (repo / "a.py").write_text("a = 2\n")
    snap = g.take_snapshot(repo)
    tree = w.add_worktree(repo, snap.commit)
    w.remove_worktree(repo, tree)
    g.delete_snapshot_ref(repo, snap.ref)
    assert not marker.exists()


def _index_bits(repo: Path) -> str:
    return run_git(repo, "ls-files", "-v")


def test_assume_unchanged_and_skip_worktree_edits_are_in_the_snapshot(make_repo):
    repo = make_repo(files={"a.cfg": "a = 1\n", "b.cfg": "b = 1\n", "c.py": "c = 1\n"})
    run_git(repo, "update-index", "--assume-unchanged", "a.cfg")
    run_git(repo, "update-index", "--skip-worktree", "b.cfg")
    (repo / "a.cfg").write_text("a = 2\n")
    (repo / "b.cfg").write_text("b = 2\n")
    bits = _index_bits(repo)
    assert run_git(repo, "status", "--porcelain") == ""  # git itself hides both edits
    index = (repo / ".git" / "index").read_bytes()
    snap = g.take_snapshot(repo)
    assert run_git(repo, "show", f"{snap.commit}:a.cfg") == "a = 2\n"
    assert run_git(repo, "show", f"{snap.commit}:b.cfg") == "b = 2\n"
    assert snap.dirty
    assert (repo / ".git" / "index").read_bytes() == index  # the person's index, byte for byte
    assert _index_bits(repo) == bits  # and so its bits


def test_sparse_checkout_files_absent_on_disk_stay_in_the_snapshot(make_repo):
    repo = make_repo(files={"in/x": "1\n", "out/y": "2\n", "top": "3\n"})
    run_git(repo, "sparse-checkout", "set", "in")
    assert not (repo / "out" / "y").exists()
    snap = g.take_snapshot(repo)
    names = run_git(repo, "ls-tree", "-r", "--name-only", snap.commit).split()
    assert names == ["in/x", "out/y", "top"]
    assert not snap.dirty


def test_an_untracked_nested_repository_is_warned_about(make_repo):
    repo = make_repo(files={"a.py": "a = 1\n"})
    inner = repo / "vendor" / "lib"
    inner.mkdir(parents=True)
    run_git(inner, "init", "-q")
    (inner / "x.py").write_text("x = 1\n")
    run_git(inner, "add", "x.py")
    run_git(inner, "commit", "-q", "-m", "inner")
    empty = repo / "scratch"
    empty.mkdir()
    run_git(empty, "init", "-q")  # a nested repository without a commit
    (empty / "notes").write_text("n\n")
    snap = g.take_snapshot(repo)
    text = "\n".join(snap.warnings)
    assert "vendor/lib" in text and "scratch" in text
    assert "nested git repositor" in text
    assert "a.py" in run_git(repo, "ls-tree", "-r", "--name-only", snap.commit)


def test_worktrees_skip_the_lfs_smudge_filter(make_repo, tmp_path):
    marker = tmp_path / "smudged"
    smudge = tmp_path / "smudge.sh"
    smudge.write_text(
        f"#!/bin/sh\n[ -n \"$GIT_LFS_SKIP_SMUDGE\" ] || echo content >> '{marker}'\ncat\n"
    )
    smudge.chmod(0o755)
    repo = make_repo(files={".gitattributes": "*.bin filter=lfs\n", "w.bin": "pointer\n"})
    run_git(repo, "config", "filter.lfs.smudge", str(smudge))
    run_git(repo, "config", "filter.lfs.clean", "cat")
    snap = g.take_snapshot(repo)
    tree = w.add_worktree(repo, snap.commit)
    try:
        assert (tree / "w.bin").read_text() == "pointer\n"
        assert not marker.exists()
    finally:
        w.remove_worktree(repo, tree)
    tree = w.add_worktree(repo, snap.commit, lfs_content=True)
    w.remove_worktree(repo, tree)
    assert marker.exists()  # the filter runs when content is asked for


def test_path_inside_worktree(make_repo, tmp_path):
    repo = make_repo(files={"src/a.py": "a = 1\n"})
    (tmp_path / "outside").mkdir()
    assert g.path_inside_worktree(repo / "ledger.db", repo)
    assert g.path_inside_worktree(repo / "src" / "deep" / "l.db", repo / "src")
    # the session may name a subfolder: a ledger at the top is still in every snapshot
    assert g.path_inside_worktree(repo / "ledger.db", repo / "src")
    assert g.path_inside_worktree(repo / ".git" / "l.db", repo / "src")
    assert not g.path_inside_worktree(tmp_path / "outside" / "l.db", repo)
    link = tmp_path / "outside" / "link"
    link.symlink_to(repo)
    assert g.path_inside_worktree(link / "l.db", repo)
    assert not g.path_inside_worktree(tmp_path / "repo-2" / "l.db", repo)


def test_refs_pinned_in_a_failed_block_are_deleted(make_repo):
    repo = make_repo(files={"a.py": "a = 1\n"})
    before = run_git(repo, "for-each-ref")
    with pytest.raises(RuntimeError), g.unpin_on_failure():
        g.take_snapshot(repo)
        g.snapshot_of_ref(repo, "HEAD")
        raise RuntimeError("lost the race")
    assert run_git(repo, "for-each-ref") == before
    with g.unpin_on_failure():
        kept = g.take_snapshot(repo)
    assert kept.ref in run_git(repo, "for-each-ref")
    with pytest.raises(KeyboardInterrupt), g.unpin_on_failure(keep=(KeyboardInterrupt,)):
        interrupted = g.take_snapshot(repo)
        raise KeyboardInterrupt
    assert interrupted.ref in run_git(repo, "for-each-ref")


def test_hooks_path_is_not_taken_from_the_environment(make_repo, tmp_path, monkeypatch):
    repo = make_repo()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "ran"
    _hook(repo, "reference-transaction", marker)
    (repo / ".git" / "hooks" / "reference-transaction").rename(hooks / "reference-transaction")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(hooks))
    snap = g.take_snapshot(repo)
    g.delete_snapshot_ref(repo, snap.ref)
    assert not marker.exists()
    assert os.environ["GIT_CONFIG_VALUE_0"] == str(hooks)


def test_a_ref_pinned_from_a_removed_worktree_is_still_deleted(make_repo):
    repo = make_repo(files={"a.py": "a = 1\n"})
    before = run_git(repo, "for-each-ref")
    with pytest.raises(RuntimeError), g.unpin_on_failure():
        with w.worktree(repo, run_git(repo, "rev-parse", "HEAD").strip()) as tree:
            (tree / "a.py").write_text("a = 2\n")
            g.take_snapshot(tree)
        raise RuntimeError("the variant was not recorded")
    assert run_git(repo, "for-each-ref") == before


def test_a_missing_folder_is_not_a_missing_git(tmp_path):
    with pytest.raises(g.GitError, match="no such directory"):
        g.git(["status"], tmp_path / "gone")


def test_an_unknown_home_is_a_plain_path(make_repo, tmp_path, monkeypatch):
    repo = make_repo()
    monkeypatch.chdir(tmp_path)
    assert not g.path_inside_worktree("~no-such-user-here/l.db", repo)


ADD_WORKTREE = """
import sys
from measure.worktrees import add_worktree
add_worktree(sys.argv[1], sys.argv[2])
"""


def test_ctrl_c_while_a_worktree_is_made_leaves_nothing(make_repo, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    started, release = tmp_path / "started", tmp_path / "release"
    slow = tmp_path / "slow.sh"
    # the checkout lasts until released (after the test's Ctrl+C), never a fixed time
    slow.write_text(
        f"#!/bin/sh\ntouch '{started}'\n"
        f"n=0; while [ ! -e '{release}' ] && [ $n -lt 6000 ]; do sleep 0.05; n=$((n+1)); done\n"
        "cat\n"
    )
    slow.chmod(0o755)
    repo = make_repo(files={".gitattributes": "*.txt filter=slow\n", "a.txt": "a\n"})
    run_git(repo, "config", "filter.slow.smudge", str(slow))
    run_git(repo, "config", "filter.slow.clean", "cat")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "GPUOPT_WORKTREES": str(tmp_path / "wt")}
    head = run_git(repo, "rev-parse", "HEAD").strip()
    # stderr goes to a file: the filter, orphaned when git is killed, holds what it inherited
    # open until released, so a pipe's end of file would come only then (a hang under load)
    err_file = tmp_path / "stderr"
    with err_file.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-c", ADD_WORKTREE, str(repo), head], env=env,
                                stderr=sink)  # fmt: skip
    deadline = time.monotonic() + 120  # bounds a failure only
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None, "the checkout never began"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=120)  # the process's end is the event, not its stderr's
    finally:
        release.touch()  # the filter may end now, whatever git did with it
    err = err_file.read_bytes()
    assert b"KeyboardInterrupt" in err
    assert list((tmp_path / "wt").iterdir()) == []
    assert run_git(repo, "worktree", "list").count("\n") == 1
