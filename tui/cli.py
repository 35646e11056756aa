"""The `gpuopt` command line.

Each command lives in its own module under `tui/commands/` with `add_parser(sub)` and
`run(args) -> int`. Command modules import only argparse at module level, so
`gpuopt --help` starts fast and never imports torch, textual or pydantic.

Exit codes: 0 ok, 1 the work failed, 2 bad usage or bad input (one clear line on stderr).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Order is the order of `gpuopt --help`: the session's own path first.
COMMAND_MODULES = (
    "sessions",
    "new",
    "open_cmd",
    "baseline",
    "variant",
    "round_cmd",
    "hypothesis",
    "preflight",
    "evidence",
    "dispose",
    "export",
    "telemetry",
    "review",
    "demo",
    "ledger_cmd",
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the person: exit 2 with one line."""


class WorkFailed(Exception):
    """The work itself failed: exit 1 with one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuopt",
        description=(
            "Guide one GPU optimization session: correctness contract, a baseline pinned to "
            "git, hypotheses written before edits, interleaved one-factor variants with live "
            "telemetry, paired statistics, and a decision record. Run without a command to "
            "open the full-screen app."
        ),
    )
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        help="ledger file to use (default: the user data directory; env GPUOPT_LEDGER)",
    )
    parser.add_argument("--version", action="version", version="gpuopt 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"tui.commands.{name}")
        except ModuleNotFoundError as exc:  # a command still being built on another branch
            if exc.name != f"tui.commands.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def _fail(message: str, code: int) -> int:
    print(f"gpuopt: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        from tui.commands.open_cmd import open_app

        handler = open_app
    try:
        return int(handler(args) or 0)
    except UsageError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except WorkFailed as exc:
        return _fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the one place that turns errors into exit codes
        return _fail_known(exc)


def _fail_known(exc: Exception) -> int:
    from pydantic import ValidationError

    from ledger import LedgerError

    if isinstance(exc, ValidationError):
        lines = [
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
        ]
        return _fail("; ".join(lines), EXIT_USAGE)
    if isinstance(exc, LedgerError):
        return _fail(str(exc), EXIT_USAGE)
    raise exc


if __name__ == "__main__":
    sys.exit(main())
