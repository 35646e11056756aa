"""The search of a bisection as pure state: what is known, what to measure next, the answer.

Commits are indices 0..n-1 of the first-parent history from good (0) to bad (n-1). An
open interval (lo, hi) is one whose ends a round showed to differ over the band. A step
measures a midpoint against both ends in one round and the verdicts place it:

- within the band of lo and over it from hi: the change is in (mid, hi];
- over it from lo and within it of hi: in (lo, mid];
- over it from both: a change in each half, and both are searched (several changes);
- within it of both: the ends' difference is spread over commits none of which moves the
  metric over the band alone (said, not searched further);
- one end decided over the band and the other undecided at the step's limit: the search
  goes on in the decided half and says the other is unresolved;
- neither decided: the search stands at (lo, hi), with the smallest effect it resolves.

An interval whose inside holds no commit left to measure is a change: at `after` when its
ends are adjacent, else at one of the skipped commits between or `after`. Nothing is
guessed: every move rests on a decided verdict. `replay` rebuilds the state from the
stored steps, which is how a bisection resumes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from session import models as m
from session.bisect.models import Judged, Side, Step

__all__ = ["Answer", "Change", "Interval", "Probe", "Search", "placed", "replay", "side_of"]

_OVER = (m.Verdict.FASTER, m.Verdict.SLOWER)
_NO_VERDICT = (m.Verdict.INCONCLUSIVE, m.Verdict.FAILED, m.Verdict.BROKEN)


def over_band(v: m.Verdict) -> bool:
    return v in _OVER


def within_band(v: m.Verdict) -> bool:
    """Decided and not over the band: SAME, or any decided verdict of a change smaller than
    the band (the statistics' own words, whatever they call it)."""
    return v not in _OVER and v not in _NO_VERDICT


def _kind(j: Judged | None) -> str | None:
    """ "over", "within", or None while undecided. A measurable change whose estimate lies
    beyond the band is undecided, not within it: a 30% step read so under noise was taken
    for "no change here" and the search lost it."""
    if j is None:
        return None
    if over_band(j.verdict):
        return "over"
    return "within" if within_band(j.verdict) and j.settled else None


def placed(j: Judged | None) -> bool:
    """The comparison says over or within the band (a step may move on it)."""
    return _kind(j) is not None


_TABLE = {
    ("within", "over"): Side.GOOD,
    ("over", "within"): Side.BAD,
    ("over", "over"): Side.BOTH,
    ("within", "within"): Side.NEITHER,
}


def side_of(vs_lo: Judged | None, vs_hi: Judged | None, final: bool) -> Side | None:
    """Where the verdicts put the midpoint; None while more blocks may still decide it."""
    a, b = _kind(vs_lo), _kind(vs_hi)
    if a is not None and b is not None:
        return _TABLE[(a, b)]
    if not final:
        return None
    if a == "over":
        return Side.LEANS_BAD
    if b == "over":
        return Side.LEANS_GOOD
    return Side.UNDECIDED


@dataclass(frozen=True)
class Probe:
    """What to measure next: the confirm round (mid None) or a step."""

    lo: int
    hi: int
    mid: int | None = None

    @property
    def kind(self) -> str:
        return "confirm" if self.mid is None else "step"

    @property
    def indices(self) -> list[int]:
        return [self.lo, self.hi] if self.mid is None else [self.lo, self.mid, self.hi]


@dataclass(frozen=True)
class Interval:
    lo: int
    hi: int
    evidence: Judged | None  # hi against lo, from the round that showed they differ


@dataclass(frozen=True)
class Change:
    """A step change between `before` (measured, like the earlier side) and `after`."""

    before: int
    after: int
    evidence: Judged | None  # after / before
    skipped_between: tuple[int, ...] = ()

    @property
    def candidates(self) -> tuple[int, ...]:
        """The commits that may have made it: `after` alone unless skipped ones lie between."""
        return (*self.skipped_between, self.after)


@dataclass(frozen=True)
class Unresolved:
    lo: int
    hi: int
    why: str  # "undecided" | "spread" | "unresolved half"
    evidence: Judged | None = None  # hi against lo (the confirm round's, when undecided)
    mid: int | None = None  # an undecided step's midpoint
    detail: Judged | None = None  # its comparison that stayed undecided


@dataclass(frozen=True)
class Answer:
    """What the bisection says, as values (session.bisect.words puts it in words)."""

    kind: str  # "in progress" | "changes" | "no difference" | "undecided"
    changes: tuple[Change, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    skipped: dict[int, str] = field(default_factory=dict)
    confirm: Judged | None = None

    def borders(self, change: Change) -> list[int]:
        """Skipped commits next to a change: between its ends, or just after it (where a
        further change could hide)."""
        near = set(change.skipped_between) | {change.after + 1}
        return sorted(i for i in self.skipped if i in near)

    def to_dict(self) -> dict[str, Any]:
        def j(x: Judged | None) -> dict[str, Any] | None:
            return None if x is None else x.model_dump(mode="json")

        return {
            "kind": self.kind,
            "changes": [
                {
                    "before": c.before,
                    "after": c.after,
                    "candidates": list(c.candidates),
                    "evidence": j(c.evidence),
                    "skipped_borders": self.borders(c),
                }
                for c in self.changes
            ],
            "unresolved": [
                {
                    "lo": u.lo,
                    "hi": u.hi,
                    "why": u.why,
                    "evidence": j(u.evidence),
                    "mid": u.mid,
                    "detail": j(u.detail),
                }
                for u in self.unresolved
            ],
            "skipped": {str(k): v for k, v in sorted(self.skipped.items())},
            "confirm": j(self.confirm),
        }


@dataclass
class Search:
    n: int
    confirmed: bool = False
    confirm: Judged | None = None
    no_difference: bool = False
    open: list[Interval] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n < 2:
            raise ValueError("a bisection needs two commits at least")

    # ------------------------------------------------------------------ what next

    def candidates(self, lo: int, hi: int) -> list[int]:
        return [i for i in range(lo + 1, hi) if i not in self.skipped]

    def next_probe(self) -> Probe | None:
        if not self.confirmed:
            return Probe(0, self.n - 1)
        if not self.open:
            return None
        iv = min(self.open, key=lambda i: i.lo)
        inside = self.candidates(iv.lo, iv.hi)
        middle = (iv.lo + iv.hi) / 2
        mid = min(inside, key=lambda i: (abs(i - middle), i))
        return Probe(iv.lo, iv.hi, mid)

    @property
    def done(self) -> bool:
        return self.next_probe() is None

    def rounds_left(self) -> int:
        """A forecast of the rounds still to run, one step per halving of each open
        interval's commits (skips and undecided steps add to it)."""
        if not self.confirmed:
            return 1 + _halvings(self.n - 2)
        return sum(_halvings(len(self.candidates(iv.lo, iv.hi))) for iv in self.open)

    # ------------------------------------------------------------------ what was seen

    def record(self, step: Step) -> None:
        if step.side is Side.INTERRUPTED:
            return  # measured again on resume
        if step.kind == "confirm":
            self._confirmed(step.vs_lo)
            return
        assert step.mid is not None and step.side is not None
        iv = next((i for i in self.open if (i.lo, i.hi) == (step.lo, step.hi)), None)
        if iv is None:
            raise ValueError(f"step {step.number}: {step.lo}..{step.hi} is not an open interval")
        lo, mid, hi = step.lo, step.mid, step.hi
        side = step.side
        if side is Side.SKIPPED:
            self.skipped[mid] = step.reason or "failed"
        else:
            self.open.remove(iv)
            lower = Interval(lo, mid, step.vs_lo)
            upper = Interval(mid, hi, step.vs_hi.inverted() if step.vs_hi else None)
            if side in (Side.GOOD, Side.LEANS_GOOD, Side.BOTH):
                self.open.append(upper)
            if side in (Side.BAD, Side.LEANS_BAD, Side.BOTH):
                self.open.append(lower)
            if side is Side.LEANS_GOOD:
                self.unresolved.append(Unresolved(lo, mid, "unresolved half", step.vs_lo))
            elif side is Side.LEANS_BAD:
                self.unresolved.append(Unresolved(mid, hi, "unresolved half", upper.evidence))
            elif side is Side.NEITHER:
                self.unresolved.append(Unresolved(lo, hi, "spread", iv.evidence))
            elif side is Side.UNDECIDED:
                undecided = [x for x in (step.vs_lo, step.vs_hi) if x and _kind(x) is None]
                detail = undecided[0] if undecided else step.vs_lo
                self.unresolved.append(Unresolved(lo, hi, "undecided", iv.evidence, mid, detail))
        self._close_narrowed()

    def _confirmed(self, judged: Judged | None) -> None:
        self.confirmed, self.confirm = True, judged
        kind = _kind(judged)
        if kind == "over":
            self.open.append(Interval(0, self.n - 1, judged))
            self._close_narrowed()
        elif kind == "within":
            self.no_difference = True
        else:
            self.unresolved.append(Unresolved(0, self.n - 1, "undecided", judged, None, judged))

    def _close_narrowed(self) -> None:
        for iv in list(self.open):
            if not self.candidates(iv.lo, iv.hi):
                self.open.remove(iv)
                between = tuple(range(iv.lo + 1, iv.hi))
                self.changes.append(Change(iv.lo, iv.hi, iv.evidence, between))
        self.changes.sort(key=lambda c: c.after)

    def answer(self) -> Answer:
        if not self.done:
            kind = "in progress"
        elif self.changes:
            kind = "changes"
        elif self.no_difference:
            kind = "no difference"
        else:
            kind = "undecided"
        return Answer(
            kind,
            tuple(self.changes),
            tuple(sorted(self.unresolved, key=lambda u: u.lo)),
            dict(self.skipped),
            self.confirm,
        )


def _halvings(k: int) -> int:
    return 0 if k <= 0 else math.ceil(math.log2(k + 1))


def replay(n: int, steps: Iterable[Step]) -> Search:
    """The search state the stored steps lead to."""
    state = Search(n)
    for step in steps:
        state.record(step)
    return state
