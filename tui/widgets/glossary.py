"""What the screens show, in words: the `?` help's glossary.

The residual classes' words are the session layer's (one place); the rail's glyphs are
the rail's own legend.
"""

from __future__ import annotations

from rich.text import Text

from session import models as m
from session.residuals import SHORT as RESIDUAL_WORDS
from tui.widgets.rail import legend
from tui.widgets.ratio import VERDICT_STYLE

# The optimization classes, as DESIGN.md defines them (models.OptimizationClass).
CLASS_WORDS: dict[m.OptimizationClass, str] = {
    m.OptimizationClass.C1: "bit-identical results",
    m.OptimizationClass.C2: "same precision, arithmetic reordered or re-associated",
    m.OptimizationClass.C3: "changed precision or approximate math (needs your acceptance)",
    m.OptimizationClass.C4: "changed semantics at boundaries, special values, determinism "
    "or aliasing (needs your acceptance and a guard)",
    m.OptimizationClass.NA: "no floating-point effect",
}

VERDICT_WORDS: dict[str, str] = {
    "FASTER": "the whole 95% interval lies below the noise band",
    "SLOWER": "the whole 95% interval lies above the noise band",
    "SAME": "the interval lies inside the noise band",
    "INCONCLUSIVE": "the interval crosses the band's edge; '+N' after it: about N more "
    "blocks would decide it",
    "FAILED": "the arm gave no value (its runs failed)",
    "BROKEN": "the variant's correctness check failed: its speed does not count",
}


def glossary() -> Text:
    t = Text()
    t.append("Verdicts\n", style="bold")
    for word, text in VERDICT_WORDS.items():
        t.append(f"  {word:<12} ", style=VERDICT_STYLE.get(word, "bold"))
        t.append(text + "\n")
    t.append("  bar ├──■──┤: the 95% interval and the estimate; │ no change; ··· the noise band\n")
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
