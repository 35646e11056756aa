"""The parser of `gpuopt session`: its arguments and help texts.

Arguments and help only: its handlers live in tui.commands.session_cmd, imported by
tui.cli once the command line is parsed (`--help` never loads them)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("session", help="rename, archive or delete a session")
    ssub = p.add_subparsers(dest="session_command", metavar="ACTION", required=True)
    r = ssub.add_parser("rename", help="give a session a new title")
    r.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    r.add_argument("title", metavar="TITLE", help="the new title")
    r.set_defaults(handler="tui.commands.session_cmd:rename")
    a = ssub.add_parser(
        "archive",
        help="set a session aside (gpuopt sessions leaves it out; --all shows it)",
        description="Set a session aside: listings leave it out unless asked (gpuopt "
        "sessions --all). Nothing of it is removed; --undo brings it back.",
    )
    a.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    a.add_argument("--undo", action="store_true", help="bring an archived session back")
    a.set_defaults(handler="tui.commands.session_cmd:archive")
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
    d.set_defaults(handler="tui.commands.session_cmd:delete")
