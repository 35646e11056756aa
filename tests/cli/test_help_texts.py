"""Every option and argument of the engine's commands says what it is in --help."""

from __future__ import annotations

import argparse

from tui.cli import build_parser

SKIP = {"open", "review", "demo"}  # the full-screen commands, documented by their own owner


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _walk(parser: argparse.ArgumentParser, path: str):
    yield path, parser
    for name, sub in _subparsers(parser):
        yield from _walk(sub, f"{path} {name}")


def test_every_argument_has_a_help_text():
    missing = []
    for name, sub in _subparsers(build_parser()):
        if name in SKIP:
            continue
        for path, p in _walk(sub, name):
            for action in p._actions:
                if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                    continue
                if not action.help:
                    missing.append(f"{path} {action.option_strings or action.dest}")
    assert not missing, "\n".join(missing)
