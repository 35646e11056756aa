"""The NaN/Inf stress trial puts NaN, +Inf and -Inf in three different rows (slices along
the last dimension) wherever there are three: a row-wise kernel (a softmax) spreads one
special over its row, and a NaN drawn into the row of the +Inf hid how each propagates.
The test suite's no-max softmax then passed that trial on one random seed in eight."""

from __future__ import annotations

import math

import torch

from measure.torch_worker.capture import stress_inputs


def _rows_of_specials(y: torch.Tensor) -> dict[str, int]:
    rows: dict[str, int] = {}
    for r, row in enumerate(y.reshape(-1, y.shape[-1])):
        for v in row.tolist():
            if math.isnan(v):
                rows["nan"] = r
            elif v == math.inf:
                rows["+inf"] = r
            elif v == -math.inf:
                rows["-inf"] = r
    return rows


def test_the_three_specials_lie_in_three_rows_on_every_seed() -> None:
    for seed in range(300):
        (y,) = stress_inputs([torch.randn(8, 64)], "nan_inf", seed)
        rows = _rows_of_specials(y)
        assert set(rows) == {"nan", "+inf", "-inf"}, seed
        assert len(set(rows.values())) == 3, (seed, rows)


def test_a_tensor_of_fewer_rows_still_gets_all_three() -> None:
    for shape in [(64,), (2, 5), (1, 1, 3)]:
        (y,) = stress_inputs([torch.randn(*shape)], "nan_inf", 7)
        flat = y.reshape(-1).tolist()
        assert sum(math.isnan(v) for v in flat) == 1, shape
        assert flat.count(math.inf) == 1 and flat.count(-math.inf) == 1, shape


def test_a_tensor_of_two_elements_gets_what_fits() -> None:
    (y,) = stress_inputs([torch.randn(2)], "nan_inf", 3)
    flat = y.tolist()
    assert math.isnan(flat[0]) or math.isnan(flat[1])
    assert sum(not math.isfinite(v) for v in flat) == 2


def test_outputs_saved_by_an_older_check_are_not_reused(monkeypatch) -> None:
    """The stress inputs changed with this check's version: a baseline's outputs saved by
    the previous version (its NaN/Inf in other places) must not be compared with a new
    variant's. The folder the outputs are saved in names the version."""
    from session import models as m
    from session import torch_checks

    w = m.Workload.parse("softmax=kernelbench:problems/softmax.py")
    now = torch_checks.trial_tag(w, 7, 3, True)
    assert f"v{torch_checks.CHECK_VERSION}" in now and torch_checks.CHECK_VERSION >= 3
    monkeypatch.setattr(torch_checks, "CHECK_VERSION", torch_checks.CHECK_VERSION - 1)
    assert torch_checks.trial_tag(w, 7, 3, True) != now
