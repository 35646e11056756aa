"""Adding a variant while other gpuopt processes write the same session, and what the
person is told about the variant they added.

`conduct.add_variant` checks that the name is free, snapshots, then writes; a second
process can take the name in between. The loser is told so, and a variant that is not
recorded leaves no snapshot ref in the person's repository. `variant_warnings` are the
add-variant warnings every front end shows (as data: `VariantWarning`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from enum import Enum
from typing import Any

from session import models as m
from session.errors import BadInput, ConductError
from session.ledger_port import LedgerLike

NAMED_FILES = 5  # uncommitted files named in the warning; the rest are counted


class VariantWarningKind(Enum):
    UNCOMMITTED_BASELINE = "uncommitted_baseline"  # the ref lacks the baseline's edits
    IDENTICAL = "identical"  # nothing to measure: the baseline's own tree
    MANY_FILES = "many_files"  # one factor should look like one
    INPUTS = "inputs"  # the variant redefines the workload's inputs (torch_inputs)


@dataclass(frozen=True)
class VariantWarning:
    kind: VariantWarningKind
    text: str
    severity: str = "warning"  # "warning" or "note" (IDENTICAL is a note)

    def words(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def add_variant(ledger: LedgerLike, session: m.Session, name: str, **how: Any) -> m.Variant:
    """conduct.add_variant, with the refs it pinned deleted when it fails (Ctrl+C too) and
    a lost race on the name said as such (BadInput)."""
    from measure.git import unpin_on_failure
    from session import conduct

    try:
        with unpin_on_failure():
            return conduct.add_variant(ledger, session, name, **how)
    except sqlite3.IntegrityError as exc:
        taken = any(v.name == name for v in ledger.list(m.Variant, session_id=session.id))
        if taken:
            raise BadInput(
                f"another gpuopt process added a variant named {name!r} to session "
                f"{session.id} first; this one was not recorded and its snapshot ref was "
                "removed (choose another --name)"
            ) from None
        raise ConductError(
            f"the variant was not recorded: the ledger refused it ({exc}); another process "
            "may have changed the session meanwhile, and its snapshot ref was removed"
        ) from None


def variant_warnings(
    ledger: LedgerLike, session: m.Session, variant: m.Variant
) -> list[VariantWarning]:
    """What adding `variant` should tell the person, in the order the CLI says it."""
    from session import conduct, torch_inputs

    out = [
        VariantWarning(VariantWarningKind.INPUTS, note)
        for note in torch_inputs.variant_add_warnings(ledger, session, variant)
    ]
    missing = conduct.missing_uncommitted(ledger, session, variant)
    if missing:
        shown = ", ".join(missing[:NAMED_FILES]) + (
            f" and {len(missing) - NAMED_FILES} more" if len(missing) > NAMED_FILES else ""
        )
        ref = variant.source.removeprefix("ref ")
        out.append(
            VariantWarning(
                VariantWarningKind.UNCOMMITTED_BASELINE,
                f"the baseline includes uncommitted changes to {shown} that {ref} does not "
                "have; the round would measure their absence too. Commit them on that "
                "branch, or make the variant with --patch (it starts from the baseline)",
            )
        )
    if variant.files_changed == 0:
        out.append(
            VariantWarning(
                VariantWarningKind.IDENTICAL,
                "this variant is identical to the baseline snapshot",
                severity="note",
            )
        )
    elif conduct.many_files(variant):
        out.append(
            VariantWarning(
                VariantWarningKind.MANY_FILES,
                f"{variant.files_changed} files changed; one factor should look like one "
                "(split it into several variants?)",
            )
        )
    return out
