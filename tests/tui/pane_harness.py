"""One step pane alone in a small app: a sample ledger's view handed in, and every
message the pane posts upward kept, so a pane is tested without the session screen."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sample_session import SID, build_sample
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.message import Message

from session import models as m
from session.ledger_access import Ledger
from session.read_model import load_view
from tui.screens import pane_messages
from tui.screens.pane_messages import PaneContext
from tui.screens.step_base import StepPane

MESSAGES = [
    cls
    for cls in vars(pane_messages).values()
    if isinstance(cls, type) and issubclass(cls, Message) and cls is not Message
]


class Holder(Vertical):
    """Holds the pane and keeps what it posts."""

    def __init__(self, pane: StepPane) -> None:
        super().__init__()
        self.pane = pane
        self.got: list[Message] = []

    def compose(self) -> ComposeResult:
        yield self.pane


def _keep(self: Holder, msg: Message) -> None:
    self.got.append(msg)
    msg.stop()


for _cls in MESSAGES:
    _name = re.sub(r"(?<!^)(?=[A-Z])", "_", _cls.__name__).lower()
    setattr(Holder, f"on_{_name}", _keep)


class PaneApp(App[None]):
    def __init__(self, pane_type: type[StepPane], ledger: Any, *, readonly: bool = False) -> None:
        super().__init__()
        self.ledger = ledger
        self.context = PaneContext(ledger=ledger, readonly=readonly)
        self.pane = pane_type(self.context)
        self.holder = Holder(self.pane)

    def compose(self) -> ComposeResult:
        yield self.holder

    def on_mount(self) -> None:
        self.pane.show(load_view(self.ledger, SID))


def sample(path: Path, upto: m.StepName = m.StepName.RECORD) -> Any:
    ledger = Ledger.open(path)
    build_sample(ledger, upto)
    return ledger


async def built(pilot: Any, pane: StepPane) -> None:
    """Wait until the pane's body is mounted and drawn from the view, then focus it."""
    for _ in range(6000):  # bounds a failure only (60 s): the mounted body is the event
        if pane.built_body:
            break
        await pilot.pause(0.01)
    assert pane.built_body
    pane.focus_first()
    await pilot.pause()
