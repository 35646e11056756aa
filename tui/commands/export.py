"""`gpuopt export`: the decision record of a session as markdown or JSON."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a session's decision record (markdown or JSON)")
    p.add_argument("session", metavar="SESSION", help="session id or a unique prefix")
    p.add_argument(
        "--format",
        choices=("md", "json"),
        default="md",
        help="md: the decision record to read (default); json: every record, for tools",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from session.record import build_export, to_json, to_markdown
    from tui.cli import UsageError
    from tui.commands.common import open_ledger, session_of

    with open_ledger(args, readonly=True) as ledger:
        session = session_of(ledger, args.session)
        data = build_export(ledger, session)
    text = to_json(data) if args.format == "json" else to_markdown(data)
    if args.output:
        out = Path(args.output)
        tmp = out.with_name(out.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(out)  # never a half-written record
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UsageError(f"-o {out}: cannot write ({exc.strerror or exc})") from None
        print(out, file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
