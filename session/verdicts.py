"""The verdict a reviewer sees for a comparison, and the words its figures are shown in.

One place for the rule, so no front end (markdown, JSON, review list, round table, demo)
can show FASTER for a variant whose correctness check failed:

- ``shown_verdict(comparison, checks, round=None) -> ShownVerdict``: BROKEN, with the
  failure in a few words ("NaN 0→80", "max rel 3.1e-2 > 1e-5"), when the variant failed
  its correctness check on the comparison's workload (a contract check command counts for
  every workload); the speed verdict of the statistics otherwise. ``checks`` may hold every
  correctness row of the session: only the comparison's variant and workload, made before
  its round ended (the latest one of each), count. With ``round`` an untrusted round
  (baseline not reproduced, too few blocks) marks the verdict untrusted, as quarantined
  runs of the comparison do. With ``floor`` (the workload's roofline floor from the
  baseline's profile, ``session.check_words.roofline_floor``) a FASTER time below it reads
  INCONCLUSIVE with the words "faster than this machine can compute it: check the
  candidate"; keep-default refuses it too (``session.gates``).
- ``verdict_for(view, comparison, failed_checks=())``: the same, from a
  ``session.read_model.SessionView`` (or anything with ``rounds`` and ``correctness``);
  ``failed_checks`` (variant ids, as a
  running round's ``conduct.Progress`` gives them) are BROKEN whatever the view holds.
- ``ShownVerdict``: ``word`` ("BROKEN", "FASTER", …), ``speed`` (the statistics'
  `Verdict`), ``correct`` (True, False, or None without a check), ``trusted``, ``failure``
  and ``untrusted_why`` (words), ``text`` ("BROKEN (NaN 0→80) · untrusted") and
  ``fields()`` (the JSON keys ``verdict``, ``speed_verdict``, ``correct``, ``trusted``).
- ``change_words(verdict, ratio, threshold)``: a MEASURABLE answer in words ("1.8% slower
  (real, below the ±2% band)"); ``interval_confidence(comparison)``, ``confidence_text``,
  ``ci_heading(rows)`` ("99.8% CI"), ``ci_cell(comparison, heading)`` (the cell under it:
  labelled itself under a bare "CI") and ``ci_legend``: the interval shown is the one that
  decided, labelled with its confidence.
- ``failure_words(check) -> str``: a failed correctness result in a few words.
- ``of_round(rows, round)``: of one arm's checks or audits, the ones a round rests on (the
  latest per workload made by the time it ended), once each: a later round checks again.
- ``round_untrusted(round) -> str``: why a round's verdicts are untrusted ("" if trusted).
- ``two_modes(comparison, round) -> str``: why one comparison is untrusted because its
  variant's or the baseline's runs fell into two modes in that round ("" if not).
- ``times_text(ratio)``: "4.85× faster" / "1.20× slower" / "no change" (within 0.5%; a ratio below 1
  is better: the statistics invert it for higher-is-better metrics);
  ``times_ci_text(low, high)``: the interval in the same words, "4.71–4.99× faster".
- ``error_headline(stats) -> str``: one output's error statistics in a line that counts
  NaN/Inf first, so a broken output never reads as tiny errors ("NaN 0→80; finite
  values: max abs 4.8e-7, max rel 1.1e-6").
- ``sci(x)``: a small float in 2 significant digits ("3.1e-2").
- ``bytes_text(n)`` and ``confidence_text``: session.format's, here for the callers that
  import them from this module.

Standard library and the measurement vocabulary only at import (``session.models`` as
types): every layer may call it cheaply, `gpuopt compare` included.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from measure.vocabulary import Verdict
from session import check_words
from session.format import bytes_text, ci_text, confidence_text

if TYPE_CHECKING:  # the models only as types: `gpuopt compare` imports this without them
    from session import models as m

_Dated = TypeVar("_Dated", "m.CorrectnessResult", "m.Audit")

__all__ = [
    "CHECK_COMMAND",
    "VERDICT_MEANINGS",
    "ShownVerdict",
    "bytes_text",
    "change_words",
    "ci_cell",
    "ci_heading",
    "ci_label",
    "ci_legend",
    "confidence_text",
    "error_headline",
    "failure_words",
    "interval_confidence",
    "of_round",
    "round_untrusted",
    "sci",
    "shown_verdict",
    "table_legend",
    "times_ci_text",
    "times_text",
    "two_modes",
    "verdict_for",
]

# What each verdict a person sees means (the app's glossary, the record's legend). The
# interval is the one shown beside the verdict, at the stopping rule's confidence (its
# label says which: 99.8% for a round of five looks), never a narrower 95% one.
VERDICT_MEANINGS: dict[str, str] = {
    "FASTER": "the interval shown (at the stopping rule's confidence) lies wholly below the "
    "noise band",
    "SLOWER": "the interval shown (at the stopping rule's confidence) lies wholly above the "
    "noise band",
    "SAME": "the interval shown lies wholly inside the noise band",
    "MEASURABLE": "a real change smaller than the band, or not shown to be larger: the "
    "interval shown excludes no change (1.00) but reaches into the noise band, e.g. '1.8% "
    "slower (real, below the ±2% band)'; never a win for keep as default",
    "INCONCLUSIVE": "the interval holds no change and crosses the band's edge; '+N' after "
    "it (or after MEASURABLE): about N more blocks would decide it, offered only where the "
    "verdict is trusted",
    "FAILED": "the arm gave no value (its runs failed)",
    "BROKEN": "the variant's correctness check failed on that workload: its speed does not count",
}

# The workload name of a contract check command's result: it covers every workload.
CHECK_COMMAND = "(check command)"


@dataclass(frozen=True)
class ShownVerdict:
    """What a reviewer sees of one comparison (see the module docstring)."""

    word: str
    speed: Verdict
    correct: bool | None = None
    trusted: bool = True
    failure: str = ""
    untrusted_why: str = ""
    words: str = ""  # MEASURABLE: "1.8% slower (real, below the ±2% band)"
    confidence: float | None = None  # of the interval that decided (shown beside it)
    note: str = ""  # "at float16": a precision change the contract's tolerance allowed
    caution: str = ""  # over 10× faster: have a second look (session.check_words)
    below_floor: bool = False  # FASTER than the roofline floor allows: shown INCONCLUSIVE
    # About this many more blocks would decide it ("+N"): offered only for a trusted verdict
    # still open. An untrusted one's words say to fix the cause and run again instead.
    more_blocks: int | None = None
    # The round's note on the comparison as a reviewer reads it: the stopping rule's words
    # on an undecided one ("about N more blocks would decide; ...") only while more blocks
    # could decide it, never beside an untrusted or BROKEN verdict.
    note_shown: str = ""

    @property
    def broken(self) -> bool:
        return self.word == Verdict.BROKEN.value

    @property
    def text(self) -> str:
        out = self.word
        if self.note and not self.broken:
            out += f" {self.note}"
        if self.broken and self.failure:
            out += f" ({self.failure})"
        elif self.words:
            out += f" {self.words}"
        if self.caution and not self.broken:
            out += " · second look"
        if not self.trusted:
            out += " · untrusted"
        return out

    def fields(self) -> dict[str, Any]:
        """The export's keys: the shown verdict and its three parts, apart, with the
        verdict in words and the confidence of the interval that decided."""
        return {
            "verdict": self.word,
            "speed_verdict": self.speed.value,
            "correct": self.correct,
            "trusted": self.trusted,
            "verdict_words": self.words,
            "ci_confidence": self.confidence,
        }


# ---------------------------------------------------------------------------- the rule


def shown_verdict(
    comparison: m.Comparison,
    checks: Iterable[m.CorrectnessResult] = (),
    round: m.Round | None = None,
    floor: check_words.Floor | None = None,
    failed_checks: Collection[str] = (),
) -> ShownVerdict:
    relevant = _relevant_checks(comparison, checks, round)
    failed = [c for c in relevant if not c.passed]
    correct: bool | None = None if not relevant else not failed
    failed_now = comparison.variant_id in failed_checks  # a running round's own check
    speed = comparison.verdict
    word = speed.value
    if speed in _DECIDED and not _finite(comparison.ratio):
        word = Verdict.INCONCLUSIVE.value  # no finite estimate decides anything
    failure = ""
    if failed or failed_now or speed is Verdict.BROKEN:
        word = Verdict.BROKEN.value
        failure = (
            "; ".join(
                dict.fromkeys(check_words.check_headline(c) or failure_words(c) for c in failed)
            )
            or "check failed"
        )
        correct = False
    why = [round_untrusted(round), two_modes(comparison, round)] if round is not None else []
    if comparison.untrusted_runs:
        why.append(f"{comparison.untrusted_runs} run(s) quarantined")
    why = [w for w in why if w]
    threshold = round.threshold if round is not None else None
    words = change_words(Verdict(word), comparison.ratio, threshold)
    impossible = check_words.floor_words(comparison.ratio, floor) if word == "FASTER" else ""
    if impossible:  # below what the machine can do: not a speedup, never FASTER
        word, words = Verdict.INCONCLUSIVE.value, impossible
    still_open = word in _OPEN and not why and not impossible
    return ShownVerdict(
        word=word,
        speed=speed,
        correct=correct,
        trusted=not why,
        failure=failure,
        untrusted_why="; ".join(why),
        words=words,
        confidence=interval_confidence(comparison),
        note=check_words.precision_note(relevant),
        caution=check_words.second_look(comparison.ratio) if word == "FASTER" else "",
        below_floor=bool(impossible),
        more_blocks=getattr(comparison, "blocks_needed", None) if still_open else None,
        note_shown=(getattr(comparison, "note", "") or "")
        if still_open or speed.value not in _OPEN
        else "",
    )


def change_words(verdict: Verdict, ratio: float | None, threshold: float | None) -> str:
    """A MEASURABLE answer in words: "1.8% slower (real, below the ±2% band)" when its
    estimate lies inside the band, "2.6% slower (real; not shown beyond the ±2% band)" when
    it does not; "" for every other verdict (their word says it all)."""
    if verdict is not Verdict.MEASURABLE or not _finite(ratio) or ratio is None or ratio <= 0:
        return ""
    way = "faster" if ratio < 1 else "slower"
    size = abs(1 - ratio)
    if threshold is None:
        return f"{size:.1%} {way} (real, not shown to be larger than the band)"
    band = f"±{threshold * 100:g}%"
    if size <= threshold:
        return f"{size:.1%} {way} (real, below the {band} band)"
    return f"{size:.1%} {way} (real; not shown beyond the {band} band)"


# The confidence of a stored interval from before the design's own interval was stored:
# those rows kept the 95% interval (and decided on a wider one, which was not kept).
LEGACY_CONFIDENCE = 0.95


def interval_confidence(comparison: Any) -> float:
    """The confidence of the interval a comparison (a compare relation, a record row)
    holds."""
    c = getattr(comparison, "confidence", None)
    if c is None:
        c = getattr(comparison, "ci_confidence", None)
    return LEGACY_CONFIDENCE if c is None else float(c)


def ci_heading(comparisons: Iterable[Any]) -> str:
    """A table's interval column named with its confidence ("99.8% CI"); "CI" alone when the
    rows differ (each cell then says its own)."""
    levels = {interval_confidence(c) for c in comparisons}
    if len(levels) == 1:
        return f"{confidence_text(levels.pop())} CI"
    return "CI"


def ci_label(comparison: Any, heading: str) -> str:
    """ "99% CI " to put before an interval whose column heading (from `ci_heading`) names no
    confidence, its rows' differing; "" under a heading that names it."""
    level = f"{confidence_text(interval_confidence(comparison))} CI"
    return "" if heading == level else f"{level} "


def ci_cell(comparison: Any, heading: str) -> str:
    """A comparison's interval in a column headed `heading` (from `ci_heading`): bare
    under a heading that names its confidence, "99.8% CI 0.731–0.755" under a bare "CI"."""
    c = comparison
    labelled = bool(ci_label(c, heading))
    return ci_text(c.ci_low, c.ci_high, interval_confidence(c) if labelled else None)


def table_legend(
    comparisons: Iterable[Any], verdicts: Iterable[ShownVerdict] | None = None
) -> list[str]:
    """The lines under a table of comparisons that say what it cannot say by itself (none
    when there is nothing to explain): why rows carry intervals at two confidences, and
    what "+N" after a verdict means. A new user saw 99% and 99.8% rows side by side, and
    "INCONCLUSIVE +1", with nothing on screen to explain either. `verdicts`: the rows'
    verdicts as the table shows them (by default, each comparison's own, without its
    round)."""
    rows = list(comparisons)
    seen = list(verdicts) if verdicts is not None else [shown_verdict(c) for c in rows]
    out: list[str] = []
    levels = sorted({interval_confidence(c) for c in rows})
    if len(levels) > 1:
        shown = [f"{confidence_text(x)} CI" for x in levels]
        at = ", ".join(shown[:-1]) + f" and {shown[-1]}"
        out.append(
            f"intervals at {at}: FASTER, SLOWER and SAME are decided on the narrower one; "
            "whether anything changed at all (MEASURABLE, else INCONCLUSIVE) on the wider "
            "one, so that a small false change stays rare"
        )
    if any(s.more_blocks for s in seen):
        out.append("+N: about N more blocks would decide it (a longer round)")
    return out


def ci_legend(confidence: float) -> str:
    """The sentence that says which interval is shown and that it is the one that decided."""
    return (
        f"the interval shown is the {confidence_text(confidence)} one the verdict was "
        "decided on (the stopping rule's confidence)"
    )


_DECIDED = (Verdict.FASTER, Verdict.SLOWER, Verdict.SAME, Verdict.MEASURABLE)
# Shown words that more blocks may still move (MEASURABLE: to beyond the band, or not).
_OPEN = (Verdict.INCONCLUSIVE.value, Verdict.MEASURABLE.value)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def verdict_for(
    view: Any, comparison: m.Comparison, failed_checks: Collection[str] = ()
) -> ShownVerdict:
    """`shown_verdict` with the checks, the round and the workload's roofline floor (from
    the baseline's profile, when the view has one) of a SessionView. `failed_checks`: the
    variants whose check failed in a round still running (`conduct.Progress.failed_checks`),
    BROKEN at once, though the view was loaded before that check was made."""
    rnd = next((r for r in view.rounds if r.id == comparison.round_id), None)
    floor = (getattr(view, "floors", None) or {}).get(comparison.workload)
    return shown_verdict(comparison, view.correctness, rnd, floor, failed_checks)


def round_untrusted(rnd: m.Round) -> str:
    """Why the verdicts of a round cannot be trusted, in words ("" when they can)."""
    from session import models as m

    why = []
    if rnd.baseline_reproduced is False:
        why.append("baseline not reproduced")
    if rnd.status is not m.RoundStatus.RUNNING and rnd.blocks < rnd.min_blocks:
        why.append(f"{rnd.blocks} of at least {rnd.min_blocks} blocks")
    return "; ".join(why)


def two_modes(comparison: Any, rnd: m.Round | None) -> str:
    """Why the comparison cannot be trusted when its variant's or the baseline's runs of
    its workload fell into two modes in its round (the round's `timing_flags`), in words;
    "" otherwise. Which mode each process lands in (the allocator, the kernel) is no
    property of the code: the ratio would compare mixtures (a no-op read SLOWER 1.35× so)."""
    if rnd is None:
        return ""
    names = rnd.summary.get("arms") or {}
    baseline = "baseline"
    said = []
    for arm in (comparison.variant_id, baseline):
        name = names.get(arm, arm)
        for flag in rnd.summary.get("timing_flags") or ():
            flagged = flag.get("arm_id", "") == arm or (
                "arm_id" not in flag and flag.get("arm") == name  # flags stored without ids
            )
            if flagged and flag.get("workload") == comparison.workload:
                who = "the baseline" if arm == baseline else (flag.get("arm") or name)
                said.append(f"the runs of {who} on {comparison.workload} fell into two modes")
                break
    if not said:
        return ""
    return " and ".join(said) + " (the round's notes give the cause): fix it and run again"


def _relevant_checks(
    comparison: m.Comparison, checks: Iterable[m.CorrectnessResult], rnd: m.Round | None
) -> list[m.CorrectnessResult]:
    """The latest check of the variant per workload (its own, or the check command), made
    before the round ended; all of them when none was made by then (clocks of another box)."""
    mine = [
        c
        for c in checks
        if c.variant_id == comparison.variant_id
        and c.workload in (comparison.workload, CHECK_COMMAND)
    ]
    end: datetime | None = rnd.ended_at if rnd is not None else None
    if end is not None:
        before = [c for c in mine if c.created_at <= end]
        mine = before or mine
    latest: dict[str, m.CorrectnessResult] = {}
    for c in sorted(mine, key=lambda c: c.created_at):
        latest[c.workload] = c
    return list(latest.values())


def of_round(rows: Iterable[_Dated], rnd: m.Round | None) -> list[_Dated]:
    """Of one arm's checks or audits, those a round rests on: per workload, the latest made
    by the time it ended (the latest of all when none was made by then: clocks of another
    box; the latest while it runs), in the order they were made."""
    end: datetime | None = rnd.ended_at if rnd is not None else None
    by_workload: dict[str, list[_Dated]] = {}
    for c in sorted(rows, key=lambda c: c.created_at):
        by_workload.setdefault(c.workload, []).append(c)
    out = []
    for made in by_workload.values():
        before = [c for c in made if end is None or c.created_at <= end]
        out.append((before or made)[-1])
    return sorted(out, key=lambda c: c.created_at)


# ---------------------------------------------------------------------------- failures


def failure_words(check: m.CorrectnessResult) -> str:
    """A failed check in a few words: what differs, by how much ("" when it passed)."""
    if check.passed:
        return ""
    if check.error.strip():
        return "raised " + _short(_last_line(check.error), 60)
    failing = [s for s in check.stats if s.passed is False] or [
        s for s in check.stats if not s.bit_identical
    ]
    if failing:
        words = _stats_words(failing[0], exact=check.exact)
        if len(check.stats) > 1:
            words = f"{_short(failing[0].output, 20)}: {words}"
        if len(failing) > 1:
            words += f" (+{len(failing) - 1} more output{'s' if len(failing) > 2 else ''})"
        return words
    bad_stress = [x for x in check.stress if isinstance(x, dict) and not x.get("passed")]
    if bad_stress:
        x = bad_stress[0]
        extra = _nonfinite_words(
            int(x.get("nan_ref") or 0),
            int(x.get("nan_new") or 0),
            int(x.get("inf_ref") or 0),
            int(x.get("inf_new") or 0),
        )
        return f"stress {_short(str(x.get('kind', '?')), 20)}: " + (
            extra or f"{x.get('mismatches', '?')} mismatched"
        )
    if check.nondeterminism.get("variant") and not check.nondeterminism.get("baseline"):
        return "nondeterministic"
    if check.exit_code is None:
        return "check timed out" if check.workload == CHECK_COMMAND else "check failed"
    if check.exit_code != 0:
        return f"check exited {check.exit_code}"
    return "check failed"


def _stats_words(s: m.ErrorStats, exact: bool) -> str:
    if not s.shape_equal:
        return f"shape {s.ref_shape} → {s.new_shape}"
    if not s.dtype_equal:
        return f"dtype {s.ref_dtype} → {s.new_dtype}"
    nonfinite = _nonfinite_words(s.nan_ref, s.nan_new, s.inf_ref, s.inf_new)
    if nonfinite or not s.nonfinite_positions_match:
        return nonfinite or "NaN/Inf at other positions"
    if exact:
        return f"not bit-identical (max abs {sci(s.max_abs)})"
    if s.max_rel is not None and s.rtol is not None and s.max_rel > s.rtol:
        return f"max rel {sci(s.max_rel)} > {sci(s.rtol)}"
    if s.max_abs is not None and s.atol is not None and s.max_abs > s.atol:
        return f"max abs {sci(s.max_abs)} > {sci(s.atol)}"
    if s.mismatches:
        return f"{s.mismatches} mismatched ({s.mismatch_share:.1%})"
    if s.signed_zero_diffs:
        return f"{s.signed_zero_diffs} signed-zero differences"
    return "outside the tolerance"


def error_headline(s: m.ErrorStats) -> str:
    if not s.shape_equal or not s.dtype_equal:
        return _stats_words(s, exact=False)
    if s.bit_identical:
        return "bit-identical"
    finite = f"max abs {sci(s.max_abs)}, max rel {sci(s.max_rel)}"
    if s.mismatches:
        share = s.mismatch_share
        shown = "<0.01%" if 0 < share < 1e-4 else f"{share:.2%}"
        finite += f", {s.mismatches} mismatched ({shown})"
    nonfinite = _nonfinite_words(s.nan_ref, s.nan_new, s.inf_ref, s.inf_new)
    if nonfinite:
        return f"{nonfinite}; finite values: {finite}"
    if not s.nonfinite_positions_match:
        return f"NaN/Inf at other positions; finite values: {finite}"
    return finite


def _nonfinite_words(nan_ref: int, nan_new: int, inf_ref: int, inf_new: int) -> str:
    parts = []
    if nan_new != nan_ref:
        parts.append(f"NaN {nan_ref}→{nan_new}")
    if inf_new != inf_ref:
        parts.append(f"Inf {inf_ref}→{inf_new}")
    return ", ".join(parts)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sci(x: float | None) -> str:
    """2 significant digits, exponent without padding: 3.1e-2, 1e-5, 0.5."""
    if x is None:
        return "—"
    if x == 0 or 0.1 <= abs(x) < 1e4:
        return f"{x:.2g}"
    mant, _, exp = f"{x:.1e}".partition("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


# ---------------------------------------------------------------------------- words for figures


def times_text(ratio: float | None) -> str:
    """A ratio (below 1 is better) as "× faster/slower"."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return "—"
    if abs(math.log(ratio)) < 0.005:  # below half a percent: 1.00× either way
        return "no change"
    if ratio < 1:
        return f"{1 / ratio:.2f}× faster"
    return f"{ratio:.2f}× slower"


def times_ci_text(low: float | None, high: float | None) -> str:
    """A ratio's interval in the words of `times_text`: "4.71–4.99× faster"."""
    if low is None or high is None or not (_finite(low) and _finite(high)):
        return "—"
    if low <= 0 or high <= 0:
        return "—"
    if high < 1:
        return f"{1 / high:.2f}–{1 / low:.2f}× faster"
    if low > 1:
        return f"{low:.2f}–{high:.2f}× slower"
    return f"{1 / low:.2f}× faster to {high:.2f}× slower"
