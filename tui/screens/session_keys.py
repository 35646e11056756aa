"""The session screen's own keys: move between the steps, back, help.

Apart from the screen, so a step's pane can name the key that jumps to a step without
importing the screen that imports every pane.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

from session.api import STEP_TITLES
from session.read_model import STEP_ORDER

SESSION_BINDINGS: list[BindingType] = [
    Binding("n", "next_step", "next", tooltip="Go to the next step", id="session.next_step"),
    Binding(
        "p", "prev_step", "prev", tooltip="Go to the previous step", id="session.prev_step"
    ),
    *[
        Binding(
            str(i + 1), f"goto({i})", STEP_TITLES[s], show=False, id=f"session.goto_{i + 1}"
        )
        for i, s in enumerate(STEP_ORDER)
    ],
    # Escape goes back one level: out of a field to its step, from a step to the list.
    Binding(
        "escape", "back", "back", show=False, tooltip="Back to the session list",
        id="session.back",
    ),
    Binding("f6", "focus_rail", "steps", show=False, tooltip="Move to the steps rail",
            id="session.focus_rail"),
    Binding("f5", "reload", "reload", show=False,
            tooltip="Reload the session from the ledger", id="session.reload"),
    Binding("question_mark", "help", "help",
            tooltip="Help: the keys and what this screen shows", id="session.help"),
]  # fmt: skip
