"""What `gpuopt compare` spends beside the runs: the verdicts are computed at the looks of
the design only, where they are read, not after every block."""

from __future__ import annotations

import random
from types import SimpleNamespace

from measure.vocabulary import RunStatus
from session.conduct import compare as engine


def test_the_statistics_run_at_the_looks_only(monkeypatch):
    calls: list[int] = []
    real = engine._relations

    def counted(commands, per_block, *args, **kwargs):
        calls.append(len(per_block[0]))
        return real(commands, per_block, *args, **kwargs)

    monkeypatch.setattr(engine, "_relations", counted)
    rng = random.Random(3)

    def noisy(command, cwd, **kw):  # 30% noise: undecided to the block limit
        return SimpleNamespace(
            status=RunStatus.OK,
            value=0.1 * (1 + rng.gauss(0, 0.3)),
            user_s=None,
            sys_s=None,
            exit_code=0,
            error="",
        )

    got = engine.compare(["a", "b"], run=noisy, seed=1, min_blocks=10, max_blocks=30)
    assert got.blocks == 30 and got.relations and got.records
    looks = list(got.design.looks)
    assert looks == [10, 15, 20, 25, 30]
    assert calls == [*looks, 30]  # each look, then the final reading; was all 30 blocks
