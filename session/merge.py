"""A team's ledger: the sessions of several boxes' ledgers merged into one.

What `gpuopt ledger merge` calls. The rules of a merge (keys kept, conflicts reported and
never overwritten, a second merge a no-op) are `ledger.merge`'s; this module opens the
files, refuses what must not be merged, and says what happened in the person's words.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ledger import Ledger
from ledger.merge import MergeReport, merge_into
from session.errors import BadInput

__all__ = ["MergeOutcome", "merge_ledgers"]


@dataclass
class MergeOutcome:
    target: Path
    created: bool  # the target was a new file
    reports: list[MergeReport] = field(default_factory=list)
    dry_run: bool = False

    @property
    def conflicts(self) -> int:
        return sum(len(r.conflicts) for r in self.reports)

    def lines(self) -> list[str]:
        """What the person reads: per source, what came in, what was there, what clashed."""
        verb = "would add" if self.dry_run else "added"
        out: list[str] = []
        for r in self.reports:
            added = sum(r.added.values())
            same = sum(r.same.values())
            parts = ", ".join(f"{t} {n}" for t, n in sorted(r.added.items()))
            out.append(
                f"{r.source}: {verb} {added} row(s)" + (f" ({parts})" if parts else "")
                + f"; {same} already there"
                + (f"; {len(r.conflicts)} conflict(s)" if r.conflicts else "")
            )  # fmt: skip
            out += [f"  conflict: {c}" for c in r.conflicts]
            out += [f"  skipped: {s}" for s in r.skipped]
            out += [f"  note: {n}" for n in r.notes]
        if self.conflicts:
            out.append(
                f"{self.conflicts} conflict(s): the same record with different content in two "
                "ledgers; the target's was kept and nothing was overwritten (look at both with "
                "gpuopt review, and settle it by hand)"
            )
        elif not any(r.changed for r in self.reports):
            out.append("nothing new: the target already holds every row")
        return out


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def merge_ledgers(
    target: Path | str, sources: list[Path | str], *, dry_run: bool = False
) -> MergeOutcome:
    """Merge each source ledger into `target` (created when missing), one transaction each.

    Sources are only read. A source from a newer gpuopt, the target itself, or a missing
    file is refused before anything is written.
    """
    target = Path(target).expanduser()
    paths = [Path(s).expanduser() for s in sources]
    if not paths:
        raise BadInput("name at least one ledger to merge")
    for p in paths:
        if not p.is_file():
            raise BadInput(f"{p}: no such ledger file")
        if target.exists() and _same(p, target):
            raise BadInput(f"{p}: that is the target ledger; merge other ledgers into it")
    created = not target.exists()
    opened = [Ledger.open(p, readonly=True) for p in paths]
    try:
        for src in opened:
            if src.newer:
                raise BadInput(
                    f"{src.path}: written by a newer gpuopt; upgrade gpuopt to merge it "
                    "(nothing was written)"
                )
        outcome = MergeOutcome(target=target, created=created, dry_run=dry_run)
        with Ledger.open(target) as into:
            if into.readonly:
                raise BadInput(f"{target}: {into._c.why_readonly}; nothing was written")
            for src in opened:
                outcome.reports.append(merge_into(into, src, dry_run=dry_run))
    finally:
        for src in opened:
            src.close()
    if dry_run and created:
        for side in ("", "-wal", "-shm"):
            Path(str(target) + side).unlink(missing_ok=True)
    return outcome
