"""Snapshots: the exact tree on disk, pinned, with nothing of the person's changed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import run_git

from measure import git as g


def state(repo: Path) -> dict[str, object]:
    """Everything a snapshot must not change: files, index bytes, HEAD, refs."""
    files = {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    return {
        "files": files,
        "index": (repo / ".git" / "index").read_bytes(),
        "HEAD": (repo / ".git" / "HEAD").read_text(),
        "head": run_git(repo, "rev-parse", "HEAD"),
        "refs": run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
    }


def dirty_repo(make_repo) -> Path:
    repo = make_repo(files={"a.py": "a = 1\n", "b.py": "b = 1\n", ".gitignore": "*.log\n"})
    (repo / "a.py").write_text("a = 2\n")
    run_git(repo, "add", "a.py")  # staged
    (repo / "a.py").write_text("a = 3\n")  # and unstaged on top
    (repo / "b.py").write_text("b = 2\n")  # unstaged
    (repo / "new.py").write_text("new = 1\n")  # untracked
    (repo / "debug.log").write_text("ignored\n")  # ignored
    return repo


def test_snapshot_records_the_exact_tree_and_changes_nothing(make_repo):
    repo = dirty_repo(make_repo)
    before = state(repo)
    snap = g.take_snapshot(repo)
    assert state(repo)["refs"] != before["refs"]
    after = state(repo)
    for key in ("files", "index", "HEAD", "head"):
        assert after[key] == before[key], key
    new_refs = set(str(after["refs"]).splitlines()) - set(str(before["refs"]).splitlines())
    assert new_refs == {f"{g.SNAPSHOT_REF_PREFIX}{snap.id} {snap.commit}"}
    assert run_git(repo, "show", f"{snap.commit}:a.py") == "a = 3\n"
    assert run_git(repo, "show", f"{snap.commit}:b.py") == "b = 2\n"
    assert run_git(repo, "show", f"{snap.commit}:new.py") == "new = 1\n"
    names = run_git(repo, "ls-tree", "-r", "--name-only", snap.commit).split()
    assert "debug.log" not in names
    assert snap.dirty and snap.head == before["head"].strip()  # type: ignore[union-attr]
    assert run_git(repo, "rev-parse", f"{snap.commit}^") == before["head"]
    msg = run_git(repo, "log", "-1", "--format=%an <%ae>|%cn|%s", snap.commit).strip()
    assert msg == f"gpuopt <gpuopt@localhost>|gpuopt|gpuopt snapshot {snap.id}"
    assert run_git(repo, "status", "--porcelain").count("\n") == 3  # a.py, b.py, new.py


def test_snapshot_of_a_clean_tree_is_not_dirty(make_repo):
    repo = make_repo()
    snap = g.take_snapshot(repo / "README")  # a file inside the repository works too
    assert not snap.dirty and snap.warnings == []
    assert snap.tree == run_git(repo, "rev-parse", "HEAD^{tree}").strip()


def test_errors_are_one_clear_line(tmp_path, make_repo):
    with pytest.raises(g.GitError, match="no such file"):
        g.take_snapshot(tmp_path / "missing")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(g.GitError, match="not inside a git repository"):
        g.take_snapshot(plain)
    empty = tmp_path / "empty"
    empty.mkdir()
    run_git(empty, "init", "-q")
    (empty / "x").write_text("x")
    with pytest.raises(g.GitError, match="no commits yet") as info:
        g.take_snapshot(empty)
    assert "\n" not in str(info.value)
    assert not (empty / ".git" / "index").exists()
    repo = make_repo()
    with pytest.raises(g.GitError, match="names no commit"):
        g.snapshot_of_ref(repo, "no-such-branch")


def test_warnings_for_large_untracked_files_lfs_pointers_and_dirty_submodules(make_repo, tmp_path):
    repo = make_repo(
        files={
            ".gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n",
            "w.bin": "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 3\n",
        }
    )
    with open(repo / "big.dat", "wb") as f:
        f.truncate(51 * 1000 * 1000)
    sub = make_repo("sub")
    run_git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    run_git(repo, "commit", "-q", "-m", "sub")
    (repo / "sub" / "README").write_text("changed inside the submodule\n")
    snap = g.take_snapshot(repo)
    text = "\n".join(snap.warnings)
    assert "big.dat (51 MB)" in text
    assert "LFS" in text and "w.bin" in text
    assert "submodules with uncommitted changes" in text and "sub" in text
    assert len(snap.warnings) == 3


def test_snapshot_of_ref_pins_that_commit(make_repo):
    repo = make_repo()
    run_git(repo, "checkout", "-q", "-b", "feature")
    (repo / "f.txt").write_text("f\n")
    run_git(repo, "add", "f.txt")
    run_git(repo, "commit", "-q", "-m", "f")
    feature = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "checkout", "-q", "main")
    snap = g.snapshot_of_ref(repo, "feature")
    assert snap.commit == feature
    assert run_git(repo, "rev-parse", snap.ref).strip() == feature
    base = g.take_snapshot(repo)
    stat, files = g.diff_stat(repo, base.commit, snap.commit)
    assert files == 1 and "f.txt" in stat and "1 insertion" in stat


def test_apply_patch_and_its_errors(make_repo, tmp_path):
    repo = make_repo(files={"a.txt": "one\n"})
    patch = tmp_path / "p.diff"
    (repo / "a.txt").write_text("two\n")
    patch.write_text(run_git(repo, "diff"))
    run_git(repo, "checkout", "-q", "--", "a.txt")
    g.apply_patch(repo, patch)
    assert (repo / "a.txt").read_text() == "two\n"
    with pytest.raises(g.GitError, match="does not apply"):
        g.apply_patch(repo, patch)
    with pytest.raises(g.GitError, match="no such patch"):
        g.apply_patch(repo, tmp_path / "none.diff")


def test_git_environment_of_the_caller_is_ignored(make_repo, tmp_path, monkeypatch):
    repo = dirty_repo(make_repo)
    other = make_repo("other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    before = (other / ".git" / "index").read_bytes()
    snap = g.take_snapshot(repo)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert os.environ.get("GIT_DIR") is None
    assert run_git(repo, "show", f"{snap.commit}:new.py") == "new = 1\n"
    assert (other / ".git" / "index").read_bytes() == before
    assert g.SNAPSHOT_REF_PREFIX not in run_git(other, "for-each-ref")


def test_split_index_repositories_keep_their_index_files(make_repo):
    repo = make_repo(files={"a.txt": "a\n"})
    run_git(repo, "config", "core.splitIndex", "true")
    run_git(repo, "update-index", "--split-index")
    (repo / "a.txt").write_text("b\n")
    run_git(repo, "add", "a.txt")
    (repo / "u.txt").write_text("u\n")
    git_dir = repo / ".git"
    before = {
        p.name: p.read_bytes()
        for p in git_dir.iterdir()
        if p.name.startswith(("index", "sharedindex"))
    }
    snap = g.take_snapshot(repo)
    from measure.worktrees import worktree

    with worktree(repo, snap.commit, "x") as tree:
        assert (tree / "u.txt").exists()
    after = {
        p.name: p.read_bytes()
        for p in git_dir.iterdir()
        if p.name.startswith(("index", "sharedindex"))
    }
    assert after == before and any(n.startswith("sharedindex") for n in before)
    assert run_git(repo, "show", f"{snap.commit}:u.txt") == "u\n"


def test_a_same_size_edit_in_the_second_of_the_last_commit_is_captured(make_repo):
    """Git compares stat data at one-second resolution; an edit made in the same second as
    the index write is 'racy' and must be re-read, also through our copy of the index."""
    import time

    for attempt in range(10):
        repo = make_repo(f"racy{attempt}", files={"value.txt": "1.00\n"})
        (repo / "value.txt").write_text("2.50\n")  # same size, same second as the commit
        index_s = int(os.stat(repo / ".git" / "index").st_mtime)
        if int(os.stat(repo / "value.txt").st_mtime) == index_s:
            break
    else:
        pytest.skip("could not edit within the second of the commit")
    while int(time.time()) == index_s:  # the snapshot comes a second later
        time.sleep(0.05)
    snap = g.take_snapshot(repo)
    assert run_git(repo, "show", f"{snap.commit}:value.txt") == "2.50\n"
