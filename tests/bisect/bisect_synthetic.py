"""A stored bisection made without processes: synthetic rounds through the real search."""

from __future__ import annotations

import math
import random

from session.bisect.models import Bisection, Commit, Spec, Status
from session.bisect.search import Search
from session.bisect.steps import run_round, to_step


def synthetic_bisection(
    n: int = 32, steps: dict[int, float] | None = None, broken: frozenset[int] = frozenset()
) -> Bisection:
    steps = {19: 0.3} if steps is None else steps
    level, levels = 1.0, []
    for i in range(n):
        level *= 1 + steps.get(i, 0.0)
        levels.append(level)
    rng = random.Random(7)
    commits = [
        Commit(sha=f"{i:02d}" + "ab" * 19, subject=f"commit {i} [x]", author="A <a@b>")
        for i in range(n)
    ]
    rec = Bisection(
        repo="/nowhere",
        good="main~31",
        bad="main",
        commits=commits,
        spec=Spec(workload="command", command="sleep 1"),
        threshold=0.1,
    )
    state = Search(n)
    while (probe := state.next_probe()) is not None:

        def sample(i: int, _block: int) -> tuple[float | None, str]:
            if i in broken:
                return None, "exit 1"
            return levels[i] * math.exp(rng.gauss(0, 0.02)), ""

        result = run_round(probe, sample, threshold=0.1, min_blocks=10, max_blocks=40, seed=1)
        step = to_step(len(rec.steps) + 1, result, [c.sha for c in commits])
        rec.steps.append(step)
        state.record(step)
    rec.answer = state.answer().to_dict()
    rec.status = Status.COMPLETED
    return rec
