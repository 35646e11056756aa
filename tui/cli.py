"""The `gpuopt` command line.

Each command has two modules: its parser, `tui/commands/parsers/M.py` (`add_parser(sub)`:
arguments and help, argparse only), and its handlers, `tui/commands/M.py`, which import
what they need at their head. A parser names its handler as a "tui.commands.M:function"
string (set_defaults(handler=...)); `main` imports that module only once the command line
is parsed. So `gpuopt --help` builds its list from COMMANDS alone, `gpuopt CMD --help` loads
CMD's parser alone, and neither loads a handler module, torch, textual or pydantic.

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

from session.api import BadInput, GpuoptError, WorkFailed

# (command, its module under tui/commands, its line in `gpuopt --help`), in the order of
# `gpuopt --help`: the session's own path first. The help lists every command from this
# table alone; a command's parser (tui/commands/parsers/M.py) is loaded only when that
# command is named, and its handlers (tui/commands/M.py, with all they import) only once
# its line is parsed: `gpuopt compare -N` starts without the ledger, pydantic or textual.
# tests/cli/test_cli_dispatch.py holds each line to the help its parser gives.
COMMANDS = (
    ("sessions", "sessions", "list the sessions in the ledger"),
    ("session", "session_cmd", "rename, archive or delete a session"),
    ("new", "new", "start a session: repository, workloads, metric and correctness check"),
    ("open", "open_cmd", "open the full-screen app on a session"),
    (
        "baseline",
        "baseline",
        "snapshot the repository and measure the baseline (reference results)",
    ),
    ("variant", "variant", "add or list variants (one factor each)"),
    (
        "round",
        "round_cmd",
        "run an interleaved round: baseline and variants, paired statistics, verdicts",
    ),
    ("job", "job", "the Slurm jobs of --slurm baselines and rounds: list, follow again, cancel"),
    ("compare", "compare", "compare commands (hyperfine's first look, interleaved and paired)"),
    ("bisect", "bisect", "find the commit that moved the metric (paired rounds, no false steps)"),
    ("hypothesis", "hypothesis", "write, edit, list hypotheses; change their status"),
    (
        "preflight",
        "preflight",
        "show or answer the preflight: six questions, checklist, bottleneck class",
    ),
    ("evidence", "evidence", "attach evidence (notes, files, profiles) to a session"),
    (
        "profile",
        "profile",
        "profile an arm's workloads: operators, launches, intermediates, roofline class",
    ),
    (
        "dispose",
        "dispose",
        "record the disposition of a variant (keep, guard, reject, ...) through its gates",
    ),
    ("export", "export", "write a session's decision record (markdown or JSON)"),
    (
        "telemetry",
        "telemetry",
        "live view of GPU clocks, power, temperature, throttle reasons and host load",
    ),
    (
        "review",
        "review",
        "browse a ledger read-only: sessions, rounds, variants, rejected hypotheses",
    ),
    ("demo", "demo", "try gpuopt on a small PyTorch softmax repository it creates"),
    ("ledger", "ledger_cmd", "check, back up, merge or locate the ledger file"),
)
COMMAND_MODULES = tuple(module for _, module, _ in COMMANDS)
_MODULE_OF = {name: module for name, module, _ in COMMANDS}

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# What the command modules raise for bad usage: the core's own family of bad input.
# (`WorkFailed`, the other name they import from here, is the core's too.)
UsageError = BadInput


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), as every error is."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


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
    """The whole command line, every command's parser loaded (no handler module); `only`:
    that command module's parser alone (what `main` builds for a command it is given)."""
    parser, sub = _top_parser()
    for name in (only,) if only else COMMAND_MODULES:
        importlib.import_module(f"tui.commands.parsers.{name}").add_parser(sub)
    _accept_ledger_everywhere(parser)
    return parser


def _help_parser() -> argparse.ArgumentParser:
    """The command line as `gpuopt --help` shows it, from COMMANDS: no module loaded (a
    word that names no command is refused by it as by the whole one)."""
    parser, sub = _top_parser()
    for name, _module, text in COMMANDS:
        sub.add_parser(name, help=text)
    return parser


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser `main` uses for argv: the named command's alone, else the help's."""
    module = _MODULE_OF.get(_command_word(argv) or "")
    return build_parser(module) if module else _help_parser()


def _top_parser() -> tuple[argparse.ArgumentParser, Any]:
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
    return parser, sub


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
    parser = parser_for(words)
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
            # imported inside _run: an import Ctrl+C stops ends as any run does
            return stops.exit_code(_run(lambda a: resolve(handler)(a), args))
        finally:
            _warn_unreadable()


def resolve(handler: str) -> Callable[[argparse.Namespace], Any]:
    """The function a parser names as "tui.commands.M:function", its module imported now:
    after parsing, so only the command that runs pays for its handlers' imports."""
    module, _, function = handler.partition(":")
    found: Callable[[argparse.Namespace], Any] = getattr(importlib.import_module(module), function)
    return found


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
