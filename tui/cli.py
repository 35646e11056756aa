"""The `gpuopt` command line.

Each command lives in its own module under `tui/commands/` with `add_parser(sub)` and
`run(args) -> int`. Command modules import only argparse at module level, so
`gpuopt --help` starts fast and never imports torch, textual or pydantic.

Exit codes: 0 ok, 1 the work failed, 2 bad usage or bad input (one clear line on stderr);
130 after Ctrl+C, and 128+N after signal N (SIGTERM 143, SIGHUP 129), which take the same
path: the current run ends, the baseline or round is marked interrupted, its worktrees are
removed. A second TERM or Ctrl+C aborts the current run (a second HUP does not).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from session.errors import BadInput, GpuoptError, WorkFailed

# Order is the order of `gpuopt --help`: the session's own path first.
COMMAND_MODULES = (
    "sessions",
    "session_cmd",
    "new",
    "open_cmd",
    "baseline",
    "variant",
    "round_cmd",
    "job",
    "compare",
    "bisect",
    "hypothesis",
    "preflight",
    "evidence",
    "profile",
    "dispose",
    "export",
    "telemetry",
    "review",
    "demo",
    "ledger_cmd",
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# What the command modules raise for bad usage: the core's own family of bad input.
# (`WorkFailed`, the other name they import from here, is the core's too.)
UsageError = BadInput


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), as every error is."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


# Commands whose start-up is part of what they measure get a parser of their own alone:
# building every command's parser costs more than `gpuopt compare -N` may spend starting.
_ALONE = {"compare": "compare"}


def _command_word(argv: Sequence[str]) -> str | None:
    """The command named in argv (after the global options), or None."""
    words = iter(argv)
    for word in words:
        if word == "--ledger":
            next(words, None)
        elif not word.startswith("-"):
            return word
        elif not word.startswith("--ledger="):
            return None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; `only`: just that command module's parser (see _ALONE)."""
    parser = _Parser(
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
    for name in (only,) if only else COMMAND_MODULES:
        module = importlib.import_module(f"tui.commands.{name}")
        module.add_parser(sub)
    _accept_ledger_everywhere(parser)
    return parser


def _accept_ledger_everywhere(parser: argparse.ArgumentParser) -> None:
    """`--ledger PATH` also after the command (`gpuopt sessions --ledger x.db`)."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for child in set(action.choices.values()):
            if "--ledger" not in child._option_string_actions:
                child.add_argument(
                    "--ledger", metavar="PATH", default=argparse.SUPPRESS, help=argparse.SUPPRESS
                )
            _accept_ledger_everywhere(child)


def _fail(message: str, code: int) -> int:
    from tui.display import plain  # error lines quote stored names: never raw controls

    print(f"gpuopt: {plain(message, 2000)}", file=sys.stderr)
    return code


# SIGTERM (a batch scheduler, systemd, kill) and SIGHUP (the SSH connection dropped).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
EXIT_INTERRUPTED = 130


class _StopSignals:
    """While a command runs: TERM and HUP act as Ctrl+C does (whatever SIGINT's handler is
    at that moment: the "stop after the current run" of a measurement, or Python's
    KeyboardInterrupt), remembering which came first for the exit code."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                if signal.getsignal(sig) is signal.SIG_IGN:
                    continue  # started under nohup: keep ignoring it
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGHUP and self.received is not None:
            # A hangup comes twice at times (the kernel, then the login shell passing it
            # on): a lost terminal is no request to abort the run in progress.
            return
        if self.received is None:
            self.received = signum
        if signum == signal.SIGHUP:
            _lose_terminal()
        else:
            print(f"\ngpuopt: {signal.Signals(signum).name} received", file=sys.stderr, flush=True)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # SIGINT ignored or default: still stop, as Ctrl+C would in the foreground
            raise KeyboardInterrupt

    def exit_code(self, code: int) -> int:
        if self.received is not None and code == EXIT_INTERRUPTED:
            return 128 + self.received
        return code


def _lose_terminal() -> None:
    """After a hangup the terminal is gone and writing to it fails (EIO): send what is
    still said there to /dev/null, so the work can end the way it was asked to. (A hung-up
    terminal no longer answers isatty; it is still a character device other than null.)
    Output redirected to a file or a pipe is left as it is."""
    import stat  # only where a signal arrives: --help never needs it

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        null_dev = os.fstat(null).st_rdev
    except OSError:
        return
    for fd in (1, 2):
        try:
            st = os.fstat(fd)
            if stat.S_ISCHR(st.st_mode) and st.st_rdev != null_dev:
                os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_ALONE.get(_command_word(words) or ""))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (one line, said) or --help: a code, as every path
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    bad = _not_utf8(args)
    if bad:
        return _fail(f"{bad}: not valid UTF-8 text", EXIT_USAGE)
    for name in ("ledger", "ledger_file"):  # '' would quietly mean the default ledger
        given = getattr(args, name, None)
        if given is not None and not given.strip():
            option = "--ledger" if name == "ledger" else "LEDGER"
            return _fail(f"{option}: an empty path; give a ledger file", EXIT_USAGE)
    handler = getattr(args, "handler", None)
    if handler is None:
        from tui.commands.open_cmd import open_app  # the app's command: loaded when it runs

        return _run(open_app, args)  # the full-screen app has its own ways to stop
    with _StopSignals() as stops:
        try:
            return stops.exit_code(_run(handler, args))
        finally:
            _warn_unreadable()


def _warn_unreadable() -> None:
    """Name the rows a command left out; the commands module is loaded only if used."""
    common = sys.modules.get("tui.commands.common")
    if common is not None:
        common.warn_unreadable()


def _run(handler: Callable[[argparse.Namespace], Any], args: argparse.Namespace) -> int:
    """The one place that turns errors into exit codes, by their root: work that failed
    exits 1; every other family of `GpuoptError` (bad input, a gate's refusal, a ledger
    that is not one or holds no such session) is about what was asked, and exits 2."""
    try:
        return int(handler(args) or 0)
    except WorkFailed as exc:
        return _fail(str(exc), EXIT_FAILED)
    except GpuoptError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # errors of the libraries beneath, said in one line
        return _fail_known(exc)


def _not_utf8(args: argparse.Namespace) -> str | None:
    """The option whose value holds bytes that are not UTF-8 (Python keeps them as lone
    surrogates in argv; no ledger, file or terminal can take them)."""
    for name, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return name if name in ("session",) else f"--{name.replace('_', '-')}"
    return None


def _fail_known(exc: Exception) -> int:
    # Only on an error: --help must stay free of pydantic and the ledger.
    import sqlite3

    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        lines = [
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        ]
        return _fail("; ".join(lines), EXIT_USAGE)
    if isinstance(exc, UnicodeEncodeError):  # e.g. bytes in argv that are not UTF-8
        return _fail(f"text that is not valid UTF-8: {exc.object[exc.start : exc.end]!r}", 2)
    if isinstance(exc, sqlite3.DatabaseError):
        if isinstance(exc, sqlite3.OperationalError):
            return _fail(f"ledger: {exc}", EXIT_FAILED)
        return _fail(
            f"the ledger is damaged ({exc}); `gpuopt ledger check` shows where", EXIT_FAILED
        )
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}", EXIT_FAILED)
    if os.environ.get("GPUOPT_DEBUG"):
        raise exc
    return _fail(
        f"internal error: {type(exc).__name__}: {exc} (GPUOPT_DEBUG=1 shows where)",
        EXIT_FAILED,
    )


if __name__ == "__main__":
    sys.exit(main())
