"""What the screens show, in words: the `?` help's glossary.

The verdicts', classes' and residual classes' words are the session layer's (one place);
the rail's glyphs are the rail's own legend.
"""

from __future__ import annotations

from rich.text import Text

from session.api import CLASS_DESCRIPTIONS as CLASS_WORDS
from session.api import RESIDUAL_WORDS, verdict_style
from session.verdicts import VERDICT_MEANINGS as VERDICT_WORDS
from tui.widgets.rail import legend


def glossary() -> Text:
    t = Text()
    t.append("Verdicts\n", style="bold")
    for word, text in VERDICT_WORDS.items():
        t.append(f"  {word:<12} ", style=verdict_style(word))
        t.append(text + "\n")
    t.append(
        "  bar ├──■──┤: the interval that decided (its confidence in the column's heading) "
        "and the estimate; │ no change; ··· the noise band\n"
    )
    t.append("\nNumerical classes\n", style="bold")
    for cls, text in CLASS_WORDS.items():
        t.append(f"  {cls.value:<4} ", style="bold cyan")
        t.append(text + "\n")
    t.append("\nResiduals (how the outcome differs from the prediction)\n", style="bold")
    for res, text in RESIDUAL_WORDS.items():
        t.append(f"  {res.value.replace('_', ' '):<15} ", style="bold")
        t.append(text + "\n")
    t.append("\nThe steps rail\n", style="bold")
    for line in legend().split("\n"):
        t.append("  ")
        t.append_text(line)
        t.append("\n")
    t.rstrip()
    return t
