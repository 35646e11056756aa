"""The suite's order for xdist's work stealing (tests/conftest.py): the parts it assumes are
the ones xdist hands out, the Slurm tests lie in the first, and every part starts with its
share of the slow tests."""

from __future__ import annotations

import itertools
import runpy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

ROOT_CONFTEST = runpy.run_path(str(Path(__file__).parent / "conftest.py"))
shares = ROOT_CONFTEST["_xdist_shares"]
order = ROOT_CONFTEST["pytest_collection_modifyitems"]


class _Node:
    """A worker as the scheduler sees it: what it was sent."""

    shutting_down = False

    def __init__(self, name: str) -> None:
        self.sent: list[int] = []
        self.gateway = type("Gateway", (), {"id": name})()

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:  # a worker left with nothing to run
        self.shutting_down = True


def _first_parts(total: int, workers: int) -> list[int]:
    """The sizes xdist's own scheduler hands `workers` idle workers at the start."""
    from xdist.scheduler.worksteal import WorkStealingScheduling

    sched: Any = WorkStealingScheduling.__new__(WorkStealingScheduling)
    sched.numnodes, sched.collection, sched.steal_requested_from_node = workers, None, None
    sched.node2collection, sched.node2pending, sched.pending = {}, {}, []
    sched.log, sched.config = (lambda *a: None), None
    nodes = [_Node(f"gw{n}") for n in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, [f"t{i}" for i in range(total)])
    sched.schedule()
    return [len(node.sent) for node in nodes]


@pytest.mark.parametrize("total,workers", [(1564, 4), (1564, 2), (10, 3), (7, 1), (3, 4)])
def test_the_parts_are_the_ones_xdist_hands_out(total: int, workers: int) -> None:
    assert shares(total, workers) == _first_parts(total, workers)


class _Item:
    def __init__(self, name: str, *marks: str, module_fixture: str = "") -> None:
        self.name, self.marks = name, set(marks)
        self.nodeid = f"{module_fixture or 'tests/test_' + name}.py::{name}"
        scope = "module" if module_fixture else "function"
        defs = {
            "fixture": [SimpleNamespace(scope=scope)],
            "tmp_path": [SimpleNamespace(scope="function")],
        }
        self._fixtureinfo = SimpleNamespace(name2fixturedefs=defs)

    def get_closest_marker(self, mark: str) -> object | None:
        return mark if mark in self.marks else None


def _suite() -> list[_Item]:
    items = [_Item(f"fast{i}") for i in range(300)]
    items[10:10] = [_Item(f"slow{i}", "slow") for i in range(40)]
    items[200:200] = [_Item(f"slurm{i}", "slow", "slurm") for i in range(5)]
    return items


def test_the_slurm_tests_lie_in_the_first_part_and_every_part_starts_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    items = _suite()
    names = sorted(i.name for i in items)
    order(items)
    assert sorted(i.name for i in items) == names  # the same tests, once each
    cuts = [0]
    for size in shares(len(items), 4):
        cuts.append(cuts[-1] + size)
    parts = [items[a:b] for a, b in itertools.pairwise(cuts)]
    assert [i.name for i in parts[0][:5]] == [f"slurm{i}" for i in range(5)]
    slow = [sum("slow" in i.marks for i in part) for part in parts]
    assert slow == [15, 10, 10, 10], slow  # the Slurm tests' part: theirs and its share
    for part in parts:  # its slow tests first
        marks = ["slow" in i.marks for i in part]
        assert marks == sorted(marks, reverse=True)


def test_every_worker_gets_the_same_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    one, two = _suite(), _suite()
    order(one)
    order(two)
    assert [i.name for i in one] == [i.name for i in two]


def test_the_tests_of_a_module_fixture_run_together_in_one_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Dealt one by one, each of four workers made the profile flow's torch profile."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    items = _suite()
    shared = [_Item(f"shared{i}", "slow", module_fixture="tests/m") for i in range(4)]
    shared.append(_Item("shared_fast", module_fixture="tests/m"))
    for n, item in enumerate(shared):
        items.insert(20 + 30 * n, item)  # apart in the collection
    order(items)
    where = [n for n, i in enumerate(items) if i.name.startswith("shared")]
    assert where == list(range(where[0], where[0] + 5)), where  # together, one after another
    assert [items[n].name for n in where] == [*(f"shared{i}" for i in range(4)), "shared_fast"]
    cuts = [0]
    for size in shares(len(items), 4):
        cuts.append(cuts[-1] + size)
    part = next(k for k in range(4) if cuts[k] <= where[0] < cuts[k + 1])
    assert cuts[part] <= where[-1] < cuts[part + 1]  # in one worker's part
    assert len(items) == len({i.name for i in items}) == 350
