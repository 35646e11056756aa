"""`gpuopt session rename|archive|delete SESSION`: keep the ledger's sessions in order."""

from __future__ import annotations

import argparse
import sys

from session.api import BadInput as UsageError
from session.api import DeleteReport, archive_session, delete_session, rename_session
from session.api import bytes_text as human_bytes
from tui.commands.common import open_ledger, session_of
from tui.display import plain


def rename(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        s = rename_session(ledger, session_of(ledger, args.session).id, args.title)
    print(f"session {plain(s.id)} is now titled '{plain(s.title)}'")
    return 0


def archive(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        s = archive_session(ledger, session_of(ledger, args.session).id, archived=not args.undo)
    if s.archived:
        print(f"session {plain(s.id)} archived (gpuopt sessions --all lists it)")
    else:
        print(f"session {plain(s.id)} is back in the listing")
    return 0


def delete(args: argparse.Namespace) -> int:
    with open_ledger(args) as ledger:
        s = session_of(ledger, args.session)
        if not args.yes:
            if not (sys.stdin.isatty() and sys.stderr.isatty()):
                raise UsageError(
                    f"deleting session {s.id} cannot be undone: say so with --yes "
                    "(no terminal here to ask on)"
                )
            refs = ", kept variants' refs included" if args.with_refs else ""
            question = (
                f"Delete session {plain(s.id)} ('{plain(s.title, 80)}') and everything "
                f"recorded for it{refs}? [y/N] "
            )
            print(question, end="", file=sys.stderr, flush=True)
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                print("nothing deleted", file=sys.stderr)
                return 1
        report = delete_session(ledger, s.id, with_refs=args.with_refs)
    _say_deleted(report)
    return 0


def _say_deleted(report: DeleteReport) -> None:
    rows = sum(report.rows.values())
    print(
        f"deleted session {plain(report.session_id)} ('{plain(report.title, 80)}'): "
        f"{rows} row(s)"
        + (
            f", {human_bytes(report.artifacts_freed)} of saved outputs"
            if report.artifacts_freed
            else ""
        )
    )
    for line in report.refs_removed:  # with its commit: `git update-ref REF COMMIT` restores it
        print(f"  removed {plain(line.ref)} {line.commit} ({plain(line.what)})")
    for line in report.refs_kept:
        kept_as = plain(report.kept_as.get(line.ref, line.ref))
        what = f"{plain(line.what)}; pinned as {kept_as}, which prune-refs never removes"
        print(f"  kept    {plain(line.ref)} {line.commit} ({what})")
    for line, why in report.refs_left:
        print(f"gpuopt: left {plain(line.ref)} {line.commit}: {plain(why)}", file=sys.stderr)
    if report.refs_removed:  # the refs are the repository's, shared by every copy
        print(
            "gpuopt: note: a copy of this ledger (gpuopt ledger backup) may still name the "
            "removed refs; gpuopt ledger check on it names any it lost, and `git update-ref "
            "REF COMMIT` with the commits above puts them back",
            file=sys.stderr,
        )
