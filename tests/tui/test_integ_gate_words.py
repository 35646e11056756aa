"""The app names what a disposition gate lacks by the decision form's fields; the command
line, by its flags: one text (session.gates), two renderings."""

from __future__ import annotations

from session.gates import in_form
from tui.screens.steps.disposition import FORM_LABELS


def test_each_flag_is_named_by_its_field() -> None:
    assert in_form("write the guard conditions (--guard)", FORM_LABELS) == (
        "write the guard conditions (the Guards field)"
    )
    got = in_form("state the optimization class (--class C1|C2|C3|C4|NA)", FORM_LABELS)
    assert got == "state the optimization class (the Numerical class field)"
    assert in_form("a rejection needs its reason (--reason)", {}) == (
        "a rejection needs its reason (--reason)"
    )
