"""What adding a variant tells the person, as data (`VariantWarning`), the same in every
front end: baseline edits its ref lacks, a variant identical to the baseline, too many
files for one factor, inputs it redefines."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from measure.git import GitError, git
from session import models as m
from session import torch_inputs
from session.ledger_port import LedgerLike

__all__ = [
    "MANY_FILES",
    "NAMED_FILES",
    "VariantWarning",
    "VariantWarningKind",
    "many_files",
    "missing_uncommitted",
    "variant_warnings",
]

MANY_FILES = 5  # a variant touching more files than this hardly looks like one factor
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


def variant_warnings(
    ledger: LedgerLike, session: m.Session, variant: m.Variant
) -> list[VariantWarning]:
    """What adding `variant` should tell the person, in the order the CLI says it."""
    out = [
        VariantWarning(VariantWarningKind.INPUTS, note)
        for note in torch_inputs.variant_add_warnings(ledger, session, variant)
    ]
    missing = missing_uncommitted(ledger, session, variant)
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
    elif many_files(variant):
        out.append(
            VariantWarning(
                VariantWarningKind.MANY_FILES,
                f"{variant.files_changed} files changed; one factor should look like one "
                "(split it into several variants?)",
            )
        )
    return out


def missing_uncommitted(ledger: LedgerLike, session: m.Session, variant: m.Variant) -> list[str]:
    """Files the baseline had uncommitted (dirty or untracked) in which a --ref variant differs.

    A branch or commit does not carry the edits that sat uncommitted in the working tree
    when the baseline was snapshotted, so the comparison would measure their absence too:
    a second factor. Empty for patch variants (they start from the baseline snapshot) and
    when the baseline was clean.
    """

    baseline = ledger.latest_baseline(session.id)
    if not variant.source.startswith("ref ") or baseline is None:
        return []
    snap = baseline.snapshot
    if not snap.dirty or snap.head is None:
        return []

    def names(a: str, b: str) -> set[str]:
        out = git(["diff", "--no-ext-diff", "--name-only", "-z", a, b, "--"], session.repo)
        return {n for n in out.stdout.decode("utf-8", "replace").split("\0") if n}

    try:
        return sorted(names(snap.head, snap.commit) & names(snap.commit, variant.snapshot.commit))
    except GitError:
        return []


def many_files(variant: m.Variant) -> bool:
    return variant.files_changed > MANY_FILES
