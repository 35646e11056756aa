"""Profiles in the decision record and beside hypotheses: the record's profile section
(tables, roofline numbers, predicted against observed mechanism evidence per variant, the
estimates each hypothesis gets from the baseline's profile), and a roofline PNG when
matplotlib is installed (numbers only when it is not)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from session import models as m
from session.profile.base import BASELINE, newest_profiles
from session.profile.check import Estimate, check_predictions, compare, estimate
from session.profile.run import latest_profiles
from session.profile.text import profile_markdown, roofline_series
from session.view import SessionView, load_rows


def hypothesis_text(h: m.Hypothesis) -> str:
    """The words of a hypothesis a profile's op and tensor names are looked up in."""
    return " ".join((h.title, h.symptom, h.mechanism, h.predicted_evidence))


def hypothesis_estimates(ledger: Any, session: m.Session, text: str) -> dict[str, Estimate]:
    """Per workload with a baseline profile, what it says of a hypothesis's text: the Amdahl
    ceiling of the ops it names and the bytes fusing the pairs it names would save."""
    return estimates_of(latest_profiles(ledger, session.id, BASELINE), text)


def estimates_of(base: Mapping[str, m.Evidence], text: str) -> dict[str, Estimate]:
    """`hypothesis_estimates` of the baseline's newest profiles (workload -> Evidence)."""
    found: dict[str, Estimate] = {}
    for workload, ev in base.items():
        e = estimate(text, ev.summary)
        if e.lines:
            found[workload] = e
    return found


def estimate_lines(ledger: Any, session: m.Session, text: str) -> list[str]:
    """The same as lines for a command's output or a form: "workload: …"."""
    return [
        f"{w}: {line}"
        for w, e in hypothesis_estimates(ledger, session, text).items()
        for line in e.lines
    ]


def mechanism_lines(
    h: m.Hypothesis | None, base: Mapping[str, Any], variant: Mapping[str, Any]
) -> list[str]:
    """Predicted against observed mechanism evidence for one variant, per workload."""
    out: list[str] = []
    for w, ev in variant.items():
        b = base.get(w)
        if b is None:
            out.append(f"{w}: no baseline profile to compare with")
            continue
        mv = compare(b.summary, ev.summary)
        if h is not None and h.predicted_evidence.strip():
            out.append(f"{w}: predicted: {h.predicted_evidence}")
        out += [f"{w}: observed: {line}" for line in mv.lines()]
        if h is not None:
            checks = check_predictions(h.predicted_evidence, mv, ev.summary)
            out += [f"{w}: {c.line()}" for c in checks]
    return out


def gathered(ledger: Any, session: m.Session) -> tuple[list[tuple[str, Any]], list[Any]]:
    """(label, summary) of the newest profiles, baseline first, and per profiled variant
    (name, its mechanism lines)."""
    return gathered_in(load_rows(ledger, session.id, session))


def gathered_in(view: SessionView) -> tuple[list[tuple[str, Any]], list[Any]]:
    """`gathered` of the rows one view holds."""
    base = newest_profiles(view.evidence, BASELINE)
    profiles: list[tuple[str, Any]] = [("baseline", ev.summary) for ev in base.values()]
    checks: list[tuple[str, list[str]]] = []
    for v in view.variants:
        mine = newest_profiles(view.evidence, v.id)
        if not mine:
            continue
        profiles += [(v.name, ev.summary) for ev in mine.values()]
        h = view.hypothesis(v.hypothesis_id) if v.hypothesis_id else None
        checks.append((v.name, mechanism_lines(h, base, mine)))
    return profiles, checks


def record_markdown(
    ledger: Any, session: m.Session, folder: Path | None = None, view: SessionView | None = None
) -> list[str]:
    """The record's profile section; with `folder` (where the record is written) a roofline
    PNG goes beside it when matplotlib is installed. `view`: the session's rows, when read
    already (else they are read here)."""
    view = view or load_rows(ledger, session.id, session)
    profiles, checks = gathered_in(view)
    if not profiles:
        return []
    picture = None
    if folder is not None:
        png = roofline_png(profiles, Path(folder) / f"roofline-{session.id}.png")
        picture = png.name if png else None
    out = profile_markdown(profiles, checks, picture)
    estimates = []
    base = newest_profiles(view.evidence, BASELINE)
    for h in view.hypotheses:
        lines = [
            f"{w}: {line}"
            for w, e in estimates_of(base, hypothesis_text(h)).items()
            for line in e.lines
        ]
        if lines:
            estimates.append(f"- {h.title}")
            estimates += [f"  - {line}" for line in lines]
    if estimates:
        out += ["### What the baseline's profile allows each hypothesis", "", *estimates, ""]
    return out


def roofline_png(profiles: Sequence[tuple[str, Mapping[str, Any]]], path: Path) -> Path | None:
    """A small log-log roofline picture, or None when matplotlib is not installed (or there
    is nothing to draw): the record then keeps the numbers only."""
    roof, points = roofline_series(profiles)
    if roof is None or not points:
        return None
    try:  # optional, and heavy: imported only when a picture is asked for
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    ridge = roof["flops"] / roof["bandwidth"]
    lo = min([ridge / 100, *(p[1] / 10 for p in points)])
    hi = max([ridge * 100, *(p[1] * 10 for p in points)])
    xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=100)
    ax.loglog(xs, [min(roof["flops"], roof["bandwidth"] * x) for x in xs], label="ceilings")
    for label, ai, achieved in points:
        ax.loglog([ai], [achieved], "o", label=label)
    ax.set_xlabel("FLOP per byte")
    ax.set_ylabel("FLOP/s")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
