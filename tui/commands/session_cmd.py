"""`gpuopt session rename|archive|delete SESSION`: keep the ledger's sessions in order."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from session.errors import BadInput as UsageError
from tui.commands.common import open_ledger, session_of

if TYPE_CHECKING:  # the command module imports only argparse when run: `--help` stays fast
    from session.manage import DeleteReport

# At the head only what costs `gpuopt CMD --help` no module of weight (the standard
# library, tui.commands.common); pydantic, rich and the engine are imported inside the
# handlers, so help never pays for them (tests/cli/test_cli_imports.py).


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("session", help="rename, archive or delete a session")
    ssub = p.add_subparsers(dest="session_command", metavar="ACTION", required=True)
    r = ssub.add_parser("rename", help="give a session a new title")
    r.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    r.add_argument("title", metavar="TITLE", help="the new title")
    r.set_defaults(handler=rename)
    a = ssub.add_parser(
        "archive",
        help="set a session aside (gpuopt sessions leaves it out; --all shows it)",
        description="Set a session aside: listings leave it out unless asked (gpuopt "
        "sessions --all). Nothing of it is removed; --undo brings it back.",
    )
    a.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    a.add_argument("--undo", action="store_true", help="bring an archived session back")
    a.set_defaults(handler=archive)
    d = ssub.add_parser(
        "delete",
        help="delete a session, its rows and the snapshot refs it pinned",
        description="Delete a session and everything recorded for it, its saved check "
        "outputs, and the snapshot refs its baselines and variants pinned in its "
        "repository. A kept variant's ref stays (it is that variant's code), pinned again "
        "as refs/gpuopt/kept/<id>, which prune-refs never removes, unless --with-refs. "
        "Refused while one of its rounds is being measured. Asks first on a terminal; "
        "elsewhere it needs --yes.",
    )
    d.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    d.add_argument(
        "--with-refs", action="store_true", help="kept variants' refs too (none pinned as kept)"
    )
    d.add_argument("--yes", "-y", action="store_true", help="do not ask")
    d.set_defaults(handler=delete)


def rename(args: argparse.Namespace) -> int:
    from session.manage import rename_session
    from tui.display import plain

    with open_ledger(args) as ledger:
        s = rename_session(ledger, session_of(ledger, args.session).id, args.title)
    print(f"session {plain(s.id)} is now titled '{plain(s.title)}'")
    return 0


def archive(args: argparse.Namespace) -> int:
    from session.manage import archive_session
    from tui.display import plain

    with open_ledger(args) as ledger:
        s = archive_session(ledger, session_of(ledger, args.session).id, archived=not args.undo)
    if s.archived:
        print(f"session {plain(s.id)} archived (gpuopt sessions --all lists it)")
    else:
        print(f"session {plain(s.id)} is back in the listing")
    return 0


def delete(args: argparse.Namespace) -> int:
    from session.manage import delete_session
    from tui.display import plain

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
    from session.format import bytes_text as human_bytes
    from tui.display import plain

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
