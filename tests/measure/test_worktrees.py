"""Worktrees: outside the person's tree, removed afterwards, stale ones cleaned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_git

from measure import git as g
from measure import worktrees as w


def test_worktree_is_outside_the_repo_and_removed(make_repo, tmp_path):
    repo = make_repo(files={"a.txt": "a\n"})
    (repo / "a.txt").write_text("dirty\n")
    index = (repo / ".git" / "index").read_bytes()
    head = (repo / ".git" / "HEAD").read_text()
    snap = g.take_snapshot(repo)
    with w.worktree(repo, snap.commit, "baseline") as tree:
        assert (tree / "a.txt").read_text() == "dirty\n"
        assert repo not in tree.parents and (tmp_path / "worktrees") in tree.parents
        assert json.loads((tree.parent / w.MARKER).read_text())["commit"] == snap.commit
        assert len(w.list_worktrees(repo)) == 2
        (tree / "scratch").write_text("left by a workload")
    assert not tree.exists() and not tree.parent.exists()
    assert w.list_worktrees(repo) == [repo]
    assert (repo / ".git" / "index").read_bytes() == index
    assert (repo / ".git" / "HEAD").read_text() == head
    assert (repo / "a.txt").read_text() == "dirty\n"
    assert not (repo / ".git" / "worktrees").exists() or not any(
        (repo / ".git" / "worktrees").iterdir()
    )


def test_base_inside_the_repo_falls_back_to_temp(make_repo, monkeypatch):
    repo = make_repo()
    monkeypatch.setenv("GPUOPT_WORKTREES", str(repo / "wt"))
    base = w.worktree_base(repo)
    assert repo.resolve() not in base.parents


def test_stale_worktrees_of_a_dead_process_are_cleaned(make_repo, tmp_path):
    repo = make_repo()
    other = make_repo("other")
    head = run_git(repo, "rev-parse", "HEAD").strip()
    stale = w.add_worktree(repo, head, "baseline")
    vanished = w.add_worktree(repo, head, "v1")
    live = w.add_worktree(repo, head, "v2")
    foreign = w.add_worktree(other, run_git(other, "rev-parse", "HEAD").strip(), "x")
    for tree in (stale, vanished, foreign):
        marker = json.loads((tree.parent / w.MARKER).read_text())
        marker["pid"] = 2**22 + 12345  # no such process
        (tree.parent / w.MARKER).write_text(json.dumps(marker))
    shutil.rmtree(vanished.parent)  # its folder was wiped, git still lists it
    user_tree = tmp_path / "users-own"
    run_git(repo, "worktree", "add", "-q", "--detach", str(user_tree), head)

    assert w.cleanup_stale_worktrees(repo) == 2
    listed = set(w.list_worktrees(repo))
    assert listed == {repo, live, user_tree}
    assert not stale.parent.exists() and live.exists() and foreign.exists()
    assert w.cleanup_stale_worktrees(repo) == 0
    w.remove_worktree(repo, live)
    assert w.cleanup_stale_worktrees(other) == 1 and not foreign.exists()
    with pytest.raises(g.GitError, match="not a gpuopt worktree"):
        w.remove_worktree(repo, user_tree)


def test_worktrees_set_removes_everything_on_error(make_repo):
    repo = make_repo()
    head = run_git(repo, "rev-parse", "HEAD").strip()
    trees: list[Path] = []
    with pytest.raises(KeyboardInterrupt), w.Worktrees(repo) as wts:
        trees += [wts.add("baseline", head), wts.add("v1", head)]
        raise KeyboardInterrupt
    assert trees and not any(t.exists() for t in trees)
    assert w.list_worktrees(repo) == [repo]


def test_post_checkout_hook_is_not_run(make_repo):
    repo = make_repo()
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text('#!/bin/sh\ntouch "$GIT_DIR/../../hook-ran"\necho ran > /dev/stderr\nexit 1\n')
    hook.chmod(0o755)
    with w.worktree(repo, "HEAD", "b") as tree:
        assert (tree / "README").exists()
    assert not (repo / "hook-ran").exists()
