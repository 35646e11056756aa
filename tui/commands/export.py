"""`gpuopt export`: the decision record of a session as markdown or JSON, or its raw
samples as CSV."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from session.api import BadInput as UsageError
from session.api import (
    LedgerError,
    for_terminal,
    is_record_of,
    refuse_overwrite,
    runs_csv,
    schema_text,
)
from session.api import gather_record as gather
from session.api import record_json as to_json
from session.api import record_to_markdown as to_markdown
from tui.commands.common import open_ledger, session_of
from tui.display import json_safe, plain


def run(args: argparse.Namespace) -> int:
    if args.schema:
        return _print_schema(args)
    if args.session is None:
        raise UsageError("export: give a SESSION (or --schema for the JSON export's schema)")
    with open_ledger(args, readonly=True) as ledger:
        if args.output:  # before any work: a record written over the ledger destroys it
            try:
                refuse_overwrite(Path(args.output).expanduser(), ledger.path)
            except LedgerError as exc:
                raise UsageError(f"-o {exc}") from None
        session = session_of(ledger, args.session)
        if args.output:
            _refuse_other_file(Path(args.output).expanduser(), session.id, args.force)
        if args.format == "csv":
            text = runs_csv(ledger, session)
        else:
            data = gather(ledger, session)  # one model, each format its exporter
    if args.format == "csv":
        text = without_controls(text)  # stored errors may hold escapes: never acted on
    else:
        text = to_json(data) if args.format == "json" else to_markdown(data)
        text = json_safe(text) if args.format == "json" else without_controls(text)
    if args.output:
        out = Path(args.output).expanduser()
        tmp = out.with_name(out.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(out)  # never a half-written record
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UsageError(f"-o {out}: cannot write ({exc.strerror or exc})") from None
        print(out, file=sys.stderr)
    else:
        sys.stdout.write(on_terminal(text) if args.format == "md" else text)
    return 0


def _print_schema(args: argparse.Namespace) -> int:
    """The JSON Schema of the JSON export, generated from the record's model (the text of
    docs/decision_record.schema.json)."""
    if args.session is not None or args.output or args.format != "md":
        raise UsageError("--schema goes alone: it prints the schema of --format json")
    sys.stdout.write(schema_text())
    return 0


def on_terminal(markdown: str) -> str:
    """The markdown record as a terminal reads it when stdout is one (no HTML entities);
    into a file or a pipe it stays markdown, as GitHub renders it."""
    return for_terminal(markdown) if sys.stdout.isatty() else markdown


def _refuse_other_file(out: Path, session_id: str, force: bool) -> None:
    """A file at `out` that is not an earlier record of this session is kept, unless
    --force: an export never replaces someone's file without a word."""
    if force or not out.exists() or is_record_of(out, session_id):
        return
    raise UsageError(
        f"-o {out}: the file exists and is not an earlier record of session {session_id}; "
        "nothing was written (--force replaces it)"
    )


def without_controls(text: str) -> str:
    """The record with stored control characters made visible, newlines and tabs kept: a
    record is read in terminals and pull requests, where ESC or a C1 CSI acts. In JSON the
    escapes stay inside strings (C0 characters are escaped by json already)."""
    return plain(text, limit=None, multiline=True)
