"""Shell text: checking the prefixes people give, quoting the commands gpuopt prints.

Every value interpolated into a command meant to be pasted (a repository path, a name,
an id, a ref) goes through shlex.quote, so a name such as `v;touch${IFS}/tmp/x;#` or a
path with spaces is one word when pasted. Contract commands (workloads, hooks, the
check, the launcher) are shell text by design and are printed as they are.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any


def launcher_problem(launcher: str | None) -> str | None:
    """Why the shell cannot use launcher as a prefix (one line), or None."""
    if launcher is None:
        return None
    try:
        words = shlex.split(launcher)
    except ValueError as exc:  # no closing quotation, no escaped character
        return f"--launcher {launcher!r}: {str(exc).lower()} (quote it as for the shell)"
    if not words:
        return "--launcher: empty (leave it out to run workloads directly)"
    return None


def command(*words: str) -> str:
    """One pasteable command line from literal words."""
    return shlex.join(words)


def gpuopt(*words: str) -> str:
    """A gpuopt command line."""
    return command("gpuopt", *words)


def comment(text: str) -> str:
    """A shell comment that stays one comment: no line break or control character in it."""
    return "# " + "".join(c if c.isprintable() else " " for c in text)


def scratch_dir(name: str) -> str:
    """Shell text for a scratch folder named after name (as one safe path component)
    in the temporary folder ($TMPDIR, else /tmp)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip(".-") or "x"
    return '"${TMPDIR:-/tmp}"/' + shlex.quote(f"gpuopt-{safe[:60]}")


def checkout(repo: str, tree: str, commit: str, subdir: str = "") -> list[str]:
    """Commands that check a snapshot out in tree (shell text, from scratch_dir), away
    from the person's work, and enter it at subdir, where the session's folder lies."""
    where = f"{tree}/{shlex.quote(subdir)}" if subdir and subdir != "." else tree
    return [f"{command('git', '-C', repo, 'worktree', 'add', '--detach')} {tree} "
            f"{shlex.quote(commit)}", f"cd {where}"]  # fmt: skip


def subdir_of(path: str) -> str:
    """Where path lies inside its git work tree ("" at the top, or when it is no longer
    one on this machine, e.g. a foreign ledger under review)."""
    from measure.git import GitError, repo_root

    try:
        here = Path(path).expanduser().resolve()
        rel = here.relative_to(repo_root(here).resolve())
    except (GitError, OSError, ValueError, RuntimeError):  # RuntimeError: ~nobody
        return ""
    return "" if str(rel) == "." else str(rel)


def reset_procedure(
    repo: str,
    snapshot_id: str,
    commit: str,
    ref: str,
    hooks: Any,
    subdir: str = "",
) -> str:
    """How to return to a baseline's snapshot by hand, as lines a person can paste."""
    lines = [
        comment(f"the snapshot {commit} is pinned as {ref}"),
        *checkout(repo, scratch_dir(snapshot_id), commit, subdir),
    ]
    if hooks.setup:
        lines += [comment("once, before the runs:"), hooks.setup]
    if hooks.prepare:
        lines += [comment("before every run:"), hooks.prepare]
    else:
        lines.append(comment("before every run: nothing (no prepare command in the contract)"))
    return "\n".join(lines)
