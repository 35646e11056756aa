"""The command palette's entries for the screen in front: each screen says what it offers.

A screen that has a `palette_commands()` method lists its commands there (every action of
every step on the session screen, with its key); `ScreenCommands` offers them to the
palette. Each command carries a few more words to be found by ("back", "session",
"help"), so a person finds it by what it does, not only by its title.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider


@dataclass(frozen=True)
class PaletteCommand:
    title: str  # "Write a new hypothesis"
    help: str  # where it acts and its key: "Hypotheses · key w"
    run: Callable[[], Any]
    words: str = ""  # more words it is found by


def commands_of(screen: Any) -> list[PaletteCommand]:
    make = getattr(screen, "palette_commands", None)
    return list(make()) if callable(make) else []


class ScreenCommands(Provider):
    """The commands of the screen the palette was opened over."""

    async def discover(self) -> Hits:
        for c in commands_of(self.screen):
            yield DiscoveryHit(c.title, c.run, help=c.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for c in commands_of(self.screen):
            score = matcher.match(c.title)
            if score > 0:
                yield Hit(score, matcher.highlight(c.title), c.run, help=c.help)
                continue
            more = max((matcher.match(w) for w in _words(c)), default=0.0)
            if more > 0:  # found by one of its other words: ranked below a title match
                yield Hit(more * 0.8, c.title, c.run, text=c.title, help=c.help)


def _words(c: PaletteCommand) -> Iterable[str]:
    yield c.help
    yield from c.words.split()
