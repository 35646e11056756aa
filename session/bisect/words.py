"""What a person reads of a bisection: each step, the cost and forecast, the answer, the
line of commits with their ratios to good, and the markdown record. Words only: the
figures come from the stored record (session.bisect.models) and its search state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from session.bisect.models import Bisection, Judged, Side, Step
from session.bisect.search import Search, replay
from session.conduct.common import band
from session.format import confidence_text
from session.verdicts import interval_confidence, times_ci_text, times_text

__all__ = [
    "Mark",
    "answer_lines",
    "commit_marks",
    "cost_line",
    "markdown",
    "step_lines",
    "summary_line",
]

_SIDE_WORDS = {
    Side.GOOD: "like the earlier end: the change lies after it",
    Side.BAD: "like the later end: the change lies before it",
    Side.BOTH: "differs from both ends: a change in each half",
    Side.NEITHER: "within the band of both ends: no single commit here moves it over the band",
    Side.LEANS_GOOD: "over the band from the later end; against the earlier one undecided",
    Side.LEANS_BAD: "over the band from the earlier end; against the later one undecided",
    Side.UNDECIDED: "undecided within the step's block limit",
    Side.SKIPPED: "skipped",
    Side.INTERRUPTED: "interrupted: measured again on resume",
}


def _commit(rec: Bisection, i: int) -> str:
    c = rec.commits[i]
    subject = c.subject if len(c.subject) <= 50 else c.subject[:49] + "…"
    return f"#{i} {c.sha[:10]} {subject!r}"


def _judged(j: Judged | None) -> str:
    if j is None:
        return "no values"
    if j.ratio is None:
        return f"no ratio ({j.note or 'too few values'})"
    # the interval that decided, named with its own confidence (older steps: 95%)
    ci = f"{confidence_text(interval_confidence(j))} CI {times_ci_text(j.ci_low, j.ci_high)}"
    return f"{times_text(j.ratio)} ({ci}) {j.verdict.value}"


def step_lines(rec: Bisection, step: Step, state: Search) -> list[str]:
    """A finished step in words, then what it cost and the forecast for the rest."""
    head = f"round {_rounds(rec.steps[: step.number])}" if step.runs else f"step {step.number}"
    if step.kind == "confirm":
        text = f"{head}: bad against good: {_judged(step.vs_lo)} at {band(rec.threshold)}"
    elif step.side is Side.SKIPPED:
        text = f"step {step.number}: {_commit(rec, step.mid or 0)} skipped: it {step.reason}"
    else:
        assert step.mid is not None
        text = (
            f"{head}: {_commit(rec, step.mid)} against #{step.lo} {_judged(step.vs_lo)}, "
            f"against #{step.hi} {_judged(step.vs_hi)}: {_SIDE_WORDS[step.side or Side.UNDECIDED]}"
        )
    if step.runs:
        text += f" [{step.blocks} blocks, {step.runs} runs, {step.elapsed_s:.1f} s]"
    if step.quarantined:
        text += (
            f"; {_n(step.quarantined, 'run')} quarantined for untrusted telemetry (their "
            "blocks run again"
            + (f"; blocks {step.left_out} left out" if step.left_out else "")
            + ")"
        )
    lines = [text]
    if state.done:
        return lines
    probe = state.next_probe()
    if probe is not None and probe.mid is not None:
        left = len(state.candidates(probe.lo, probe.hi))
        lines.append(
            f"  searching #{probe.lo}..#{probe.hi}: {_n(left, 'commit')} left between them"
        )
    lines.append("  " + cost_line(rec, state))
    return lines


def block_line(rec: Bisection, result: Any) -> str:
    """A round in progress (session.bisect.steps.RoundResult), for a live status line."""
    p = result.probe
    what = "bad against good" if p.mid is None else f"#{p.mid} in #{p.lo}..#{p.hi}"
    return (
        f"round {_rounds(rec.steps) + 1}: {what} · block {result.blocks} of at most "
        f"{rec.max_blocks} · {_n(result.runs, 'run')}"
    )


def _rounds(steps: list[Step]) -> int:
    return sum(1 for s in steps if s.runs)


def cost_line(rec: Bisection, state: Search | None = None) -> str:
    """Rounds, runs and wall time spent, and the forecast for the rest."""
    state = state or replay(len(rec.commits), rec.steps)
    measured = [s for s in rec.steps if s.runs]
    runs = sum(s.runs for s in rec.steps)
    wall = sum(s.elapsed_s for s in rec.steps)
    text = f"spent {_n(_rounds(rec.steps), 'round')}, {_n(runs, 'run')}, {_duration(wall)}"
    left = state.rounds_left()
    if state.done or not left:
        return text
    steps3 = [s for s in measured if s.kind == "step"] or measured
    if not steps3:
        return f"{text}; forecast: about {left} more {'round' if left == 1 else 'rounds'}"
    per_runs = sum(s.runs for s in steps3) / len(steps3)
    per_s = sum(s.elapsed_s for s in steps3) / len(steps3)
    return (
        f"{text}; forecast: about {left} more {'round' if left == 1 else 'rounds'}, "
        f"~{round(left * per_runs)} runs, "
        f"~{_duration(left * per_s)}"
    )


def _n(k: int, word: str) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def answer_lines(rec: Bisection) -> list[str]:
    """The answer: each change with its size and interval, what stays unresolved, what was
    skipped (and whether a skipped commit borders a change); never a guess."""
    a = rec.answer
    if not a:
        return ["no answer yet: the bisection has not finished its first round"]
    out: list[str] = []
    kind = a["kind"]
    skipped = {int(k): v for k, v in a.get("skipped", {}).items()}
    if kind == "in progress":
        out.append(
            f"not finished ({rec.status.value}): resume with `gpuopt bisect --resume {rec.id}`"
        )
    if kind == "no difference":
        c = _load(a.get("confirm"))
        out.append(f"no difference between good and bad: {_judged(c)} at {band(rec.threshold)}")
        if c is not None and c.ci_low and c.ci_high:
            widest = max(abs(c.ci_low - 1), abs(c.ci_high - 1))
            out.append(f"  this round rules out a change larger than {widest:.1%}")
    changes = a.get("changes", [])
    if changes:
        n = len(changes)
        out.append(
            "the change over the band:" if n == 1 else f"{n} changes over the band, in order:"
        )
    for c in changes:
        ev = _load(c.get("evidence"))
        cands = c["candidates"]
        if len(cands) == 1:
            where = f"{_commit(rec, c['after'])} by {rec.commits[c['after']].author}"
        else:
            names = ", ".join(f"#{i} {rec.commits[i].sha[:10]}" for i in cands)
            where = f"one of {names} (those before #{c['after']} were skipped)"
        out.append(f"  {where}: {_judged(ev)} against #{c['before']}")
        for s in c.get("skipped_borders", []):
            why = skipped.get(s, "")
            out.append(f"    skipped commit #{s} {rec.commits[s].sha[:10]} borders it: it {why}")
    together = _together(changes, _load(a.get("confirm"))) if changes else ""
    if len(changes) > 1 or together.endswith("(under the band)"):
        out.append("  " + together)
    for u in a.get("unresolved", []):
        ev = _load(u.get("evidence"))
        span = f"#{u['lo']}..#{u['hi']}"
        if u["why"] == "spread":
            out.append(
                f"  {span}: the ends differ ({_judged(ev)}), but the step between them found no "
                f"single commit over {band(rec.threshold)}: the change is spread over several"
            )
        elif u["why"] == "unresolved half":
            continue  # said together below
        elif u.get("mid") is None and (u["lo"], u["hi"]) == (0, len(rec.commits) - 1):
            out.append(
                f"no verdict on bad against good within {rec.max_blocks} blocks: {_judged(ev)}"
            )
            out.append(f"  {_resolves(_load(u.get('detail')), rec)}")
        else:
            detail = _load(u.get("detail"))
            out.append(
                f"  the search stands at {span} (its ends: {_judged(ev)}): #{u['mid']} was not "
                f"placed within {rec.max_blocks} blocks; {_resolves(detail, rec)}"
            )
    halves = _merged([(u["lo"], u["hi"]) for u in a.get("unresolved", [])
                      if u["why"] == "unresolved half"])  # fmt: skip
    if halves:
        out.append(
            f"  not shown free of further changes over {band(rec.threshold)} (the comparison "
            "stayed undecided at this noise): "
            + ", ".join(f"#{lo}..#{hi}" for lo, hi in halves)
            + "; a wider --threshold or a higher --max-blocks would settle them"
        )
    for i, why in sorted(skipped.items()):
        out.append(f"  skipped #{i} {rec.commits[i].sha[:10]}: it {why}")
    return out


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans that touch, joined: #0..#15 and #15..#18 are #0..#18."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def _together(changes: list[dict[str, Any]], confirm: Judged | None) -> str:
    """The changes found, multiplied, beside good against bad: what they leave unexplained."""
    product = 1.0
    for c in changes:
        ev = _load(c.get("evidence"))
        if ev is None or ev.ratio is None:
            return "together: not every change has a ratio"
        product *= ev.ratio
    text = f"together {times_text(product)}"
    if confirm is None or confirm.ratio is None:
        return text
    text += f"; bad against good {_judged(confirm)}"
    lo, hi = confirm.ci_low, confirm.ci_high
    if lo is not None and hi is not None and not lo <= product <= hi:
        text += ": outside its interval, so some of the change lies elsewhere (under the band)"
    return text


def _resolves(j: Judged | None, rec: Bisection) -> str:
    if j is None or j.min_effect is None:
        return "too few values for a verdict"
    return (
        f"at this noise a round of {rec.max_blocks} blocks resolves effects of "
        f"{j.min_effect:.1%} and more (--max-blocks or a wider --threshold decide sooner)"
    )


def _load(data: dict[str, Any] | None) -> Judged | None:
    return None if data is None else Judged.model_validate(data)


def summary_line(rec: Bisection) -> str:
    """One line for listings: what was found, in how many rounds."""
    a = rec.answer or {}
    kind = a.get("kind", "in progress")
    changes = a.get("changes", [])
    if changes:
        found = ", ".join(
            "/".join(f"#{i} {rec.commits[i].sha[:8]}" for i in c["candidates"]) for c in changes
        )
        kind = f"{len(changes)} change{'s' if len(changes) > 1 else ''}: {found}"
    return f"{rec.good}..{rec.bad} ({len(rec.commits)} commits) · {kind} · {cost_line(rec)}"


@dataclass(frozen=True)
class Mark:
    """One measured commit on the line: its ratio to good (chained through the steps'
    paired ratios) and what the search made of it."""

    index: int
    sha: str
    ratio: float | None
    # good | bad | earlier | later | both | flat | undecided | skipped | change
    mark: str


def commit_marks(rec: Bisection) -> list[Mark]:
    n = len(rec.commits)
    ratio: dict[int, float | None] = {0: 1.0}
    mark: dict[int, str] = {0: "good"}
    for s in rec.steps:
        if s.kind == "confirm" and s.vs_lo is not None:
            ratio[n - 1], mark[n - 1] = s.vs_lo.ratio, "bad"
        elif s.mid is not None and s.side is not Side.INTERRUPTED:
            ratio[s.mid] = _chain(ratio.get(s.lo), s.vs_lo) or _chain(ratio.get(s.hi), s.vs_hi)
            mark[s.mid] = {
                Side.GOOD: "earlier",
                Side.LEANS_GOOD: "earlier",
                Side.BAD: "later",
                Side.LEANS_BAD: "later",
                Side.BOTH: "both",
                Side.NEITHER: "flat",
                Side.SKIPPED: "skipped",
            }.get(s.side or Side.UNDECIDED, "undecided")
    for c in (rec.answer or {}).get("changes", []):
        mark[c["after"]] = "change"
    return [Mark(i, rec.commits[i].sha, ratio.get(i), mark[i]) for i in sorted(mark)]


def _chain(base: float | None, j: Judged | None) -> float | None:
    if base is None or j is None or j.ratio is None:
        return None
    return base * j.ratio


def commit_line(rec: Bisection) -> str:
    """The marks as plain text: "#0 1.00 · #15 1.01 · #19 1.30 change · #31 1.30"."""
    parts = []
    for k in commit_marks(rec):
        r = "—" if k.ratio is None else f"{k.ratio:.2f}"
        tag = "" if k.mark in ("good", "bad", "earlier", "later") else f" {k.mark}"
        parts.append(f"#{k.index} {r}{tag}")
    return " · ".join(parts)


def _md_line(line: str) -> str:
    """An answer line as markdown: its indented lines as (nested) list items."""
    depth = (len(line) - len(line.lstrip(" "))) // 2
    return line if depth == 0 else "  " * (depth - 1) + "- " + line.strip()


def markdown(rec: Bisection, diff_stats: dict[int, str]) -> str:
    """The record of a bisection: the answer, each culprit's subject, author and diff stat
    with its evidence, and every step."""
    s = rec.spec
    lines = [
        f"# Bisection {rec.id}",
        "",
        f"- repository: `{rec.repo}`",
        f"- good `{rec.good}` ({rec.commits[0].sha[:10]}) → bad `{rec.bad}` "
        f"({rec.commits[-1].sha[:10]}): {len(rec.commits)} commits on the first-parent line",
        f"- workload {s.workload}: `{s.command}`; figure: {s.metric_name} ({s.unit}, "
        f"{'higher' if s.higher else 'lower'} is better)",
        f"- band {band(rec.threshold)}; each round {rec.min_blocks} to {rec.max_blocks} "
        "interleaved blocks, verdicts of the sequential rule at its looks",
        f"- status: {rec.status.value}; {cost_line(rec)}",
        "",
        "## Answer",
        "",
        *(_md_line(line) for line in answer_lines(rec)),
        "",
        f"Commits measured (ratio to good): {commit_line(rec)}",
        "",
    ]
    for c in (rec.answer or {}).get("changes", []):
        commit = rec.commits[c["after"]]
        ev = _load(c.get("evidence"))
        lines += [
            f"## Change at {commit.sha[:10]}: {commit.subject}",
            "",
            f"- commit {commit.sha}, by {commit.author}",
            f"- against #{c['before']} {rec.commits[c['before']].sha[:10]}: {_judged(ev)}"
            + (f" over {ev.n} paired blocks" if ev is not None else ""),
            "",
            "```",
            diff_stats.get(c["after"], "(no diff stat)"),
            "```",
            "",
        ]
    lines += [
        "## Steps",
        "",
        "| step | commits | against the earlier end | against the later end | outcome "
        "| blocks | runs | s |",
        "|---:|:---|:---|:---|:---|---:|---:|---:|",
    ]
    for st in rec.steps:
        where = f"#{st.lo} vs #{st.hi}" if st.mid is None else f"#{st.mid} in #{st.lo}..#{st.hi}"
        outcome = "confirm" if st.kind == "confirm" else (st.side.value if st.side else "—")
        if st.reason:
            outcome += f": {st.reason}"
        if st.quarantined:
            outcome += f" ({st.quarantined} runs quarantined)"
        lines.append(
            f"| {st.number} | {where} | {_judged(st.vs_lo)} | "
            f"{_judged(st.vs_hi) if st.mid is not None else ''} | {outcome} | {st.blocks} | "
            f"{st.runs} | {st.elapsed_s:.1f} |"
        )
    return "\n".join(lines) + "\n"
