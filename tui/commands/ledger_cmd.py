"""`gpuopt ledger check|backup|merge|path|prune-artifacts|prune-refs`: the health of the ledger
file, of the correctness artifacts kept beside it, and of the snapshot refs it pinned."""

from __future__ import annotations

import argparse
import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import Any

from session import api
from session.api import BadInput as UsageError
from session.api import (
    WorkFailed,
    artifacts_root,
    backup_ledger,
    find_artifacts,
    merge_ledgers,
    missing_refs,
    prunable,
    referenced_paths,
    repos_lacking_refs,
)
from session.api import bytes_text as human_bytes
from session.api import prune_refs as prune_repo_refs
from session.api import remove_artifacts as remove
from tui.commands.common import ledger_path, open_ledger, print_json
from tui.display import plain

CORRECTNESS_TABLE = "correctness"


def check(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        problems = api.ledger_problems(ledger)
        # Rows the models cannot read back (bad JSON, wrong types, unknown fields).
        try:
            problems += [str(row) for row in api.unreadable_rows(ledger)]
        except sqlite3.DatabaseError as exc:  # damage the integrity check has named already
            problems.append(f"row check stopped: {exc}")
        unreachable: list[str] = []
        lacking: list[str] = []
        if not problems:  # a damaged file's rows are not worth following into git
            lost, unreachable = missing_refs(ledger)
            problems += [m.problem() for m in lost]
            lacking = repos_lacking_refs(lost)
        counts = api.ledger_counts(ledger)
        entries = find_artifacts(ledger.path, referenced_paths(ledger))
        report = {
            "path": str(ledger.path),
            "ok": not problems,
            "problems": problems,
            "newer": ledger.newer,
            "counts": counts,
            "repos_not_checked": unreachable,
            "repos_lacking_refs": lacking,
            "artifacts": {
                "root": str(artifacts_root(ledger.path)),
                "bytes": sum(e.size for e in entries),
                "folders": [
                    {"path": str(e.path), "session": e.session_id, "bytes": e.size,
                     "referenced": e.referenced, "recent": e.recent}
                    for e in entries
                ],
            },
        }  # fmt: skip
    if args.json:
        print_json(report)
    else:
        state = "ok" if not problems else f"{len(problems)} problem(s)"
        print(f"{plain(report['path'])}: {state}")
        if ledger.newer:
            print("written by a newer gpuopt: opened read-only")
        for p in problems:  # long enough for a recovery command with two paths in it
            print(f"  {plain(p, 1000)}")
        print("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for line in lacking:
            print(f"  {plain(line, 1000)}")
        for repo in unreachable:
            print(f"  snapshot refs not checked in {plain(repo)}: not a repository here")
        print_artifacts(entries, artifacts_root(ledger.path))
    return 0 if not problems else 1


def print_artifacts(entries: list[Any], root: Any) -> None:
    if not entries:
        print(f"artifacts: none ({plain(root)})")
        return
    loose = [e for e in entries if not e.referenced]
    print(
        f"artifacts: {len(entries)} folder(s), {human_bytes(sum(e.size for e in entries))} "
        f"in {plain(root)}; {len(loose)} not referenced "
        f"({human_bytes(sum(e.size for e in loose))}, gpuopt ledger prune-artifacts frees them)"
    )
    for e in entries:
        state = "in use" if e.referenced else "recent" if e.recent else "not referenced"
        print(f"  {human_bytes(e.size):>10}  {state:<14}  {plain(e.path)}")


def prune_artifacts(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        referenced = referenced_paths(ledger)
        unreadable = [r for r in ledger.unreadable if r.table == CORRECTNESS_TABLE]
        if unreadable and not args.all:  # such a row may name folders we cannot see
            raise WorkFailed(
                f"{len(unreadable)} stored correctness result(s) cannot be read, so what they "
                "refer to is unknown; nothing deleted (--all deletes every folder)"
            )
        entries = find_artifacts(ledger.path, referenced)
        ledger_file = ledger.path
    doomed = prunable(entries, args.all)
    kept_recent = [e for e in entries if e.recent and not e.referenced and e not in doomed]
    size = human_bytes(sum(e.size for e in doomed))
    verb = "would delete" if args.dry_run else "deleted"
    for e in doomed:
        print(f"{verb} {plain(e.path)} ({human_bytes(e.size)})")
    if not args.dry_run:
        size = human_bytes(remove(doomed, ledger_file))
    print(
        f"{verb} {len(doomed)} folder(s), {'would free' if args.dry_run else 'freed'} {size} "
        f"in {plain(artifacts_root(ledger_file))}"
        + (f"; kept {len(kept_recent)} written in the last 15 minutes" if kept_recent else "")
    )
    return 0


def prune_refs(args: argparse.Namespace) -> int:
    with open_ledger(args, readonly=True) as ledger:
        report = prune_repo_refs(ledger, args.repo, dry_run=args.dry_run)
    if args.json:
        print_json({**asdict(report), "repo": str(report.repo), "dry_run": args.dry_run})
        return 0
    verb = "would delete" if args.dry_run else "deleted"
    for line in report.unused:
        print(f"{verb} {plain(line.ref)} {line.commit}")
    for line in report.recent:
        print(f"kept {plain(line.ref)} {line.commit} (pinned in the last 15 minutes)")
    print(
        f"{verb} {len(report.unused)} snapshot ref(s) in {plain(report.repo)}; "
        f"{report.in_use} in use by the ledger"
        + (f", {len(report.recent)} recent kept" if report.recent else "")
    )
    return 0


def backup(args: argparse.Namespace) -> int:
    target = Path(args.target)
    if target.exists():
        raise UsageError(f"{target}: already exists; choose a new file")
    with open_ledger(args, readonly=True) as ledger:
        backup_ledger(ledger, target)
    print(target)
    return 0


def merge(args: argparse.Namespace) -> int:
    target = Path(args.output).expanduser() if args.output else ledger_path(args)
    outcome = merge_ledgers(target, args.sources, dry_run=args.dry_run)
    if args.json:
        print_json(
            {
                "target": str(outcome.target),
                "created": outcome.created,
                "dry_run": outcome.dry_run,
                "conflicts": outcome.conflicts,
                "sources": [
                    {**asdict(r), "conflicts": [str(c) for c in r.conflicts]}
                    for r in outcome.reports
                ],
            }
        )
    else:
        print(f"{plain(outcome.target)}{' (new)' if outcome.created else ''}")
        for line in outcome.lines():
            print(plain(line, 1000))
    return 1 if outcome.conflicts else 0


def path(args: argparse.Namespace) -> int:
    print(ledger_path(args))
    return 0
