"""Every model survives JSON and the ledger unchanged; invalid input names its field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_examples import COMMIT, float_strategy, full, text_strategy
from pydantic import BaseModel, ValidationError

from ledger import Ledger
from ledger.store import TABLES
from session import models as m

# Ids of the rows generated entities point at: long enough that drawn text never hits one.
FIXED = {"session_id": "chain-session", "baseline_id": "chain-baseline",
         "hypothesis_id": "chain-hypothesis", "variant_id": "chain-variant",
         "round_id": "chain-round"}  # fmt: skip
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("cls", m.ALL_MODELS, ids=lambda c: c.__name__)
def test_every_model_round_trips_through_json(cls: type[BaseModel]) -> None:
    item = full(cls)
    assert cls.model_validate_json(item.model_dump_json()) == item
    assert cls.model_validate(item.model_dump(mode="json")) == item
    # every field was set to something other than its default, so each one was carried
    defaults = cls.model_construct()
    changed = [n for n in cls.model_fields if getattr(item, n) != getattr(defaults, n, None)]
    assert changed, cls


def _chain(ledger: Ledger) -> None:
    """The rows that generated entities point at (foreign keys are enforced)."""
    f = FIXED
    session = full(m.Session, id=f["session_id"])
    baseline = full(m.Baseline, id=f["baseline_id"], session_id=f["session_id"])
    hypothesis = full(m.Hypothesis, id=f["hypothesis_id"], session_id=f["session_id"])
    variant = full(
        m.Variant,
        id=f["variant_id"],
        session_id=f["session_id"],
        hypothesis_id=f["hypothesis_id"],
        name="chain",
    )
    round_ = full(
        m.Round, id=f["round_id"], session_id=f["session_id"], baseline_id=f["baseline_id"]
    )
    ledger.put(session, baseline, hypothesis, variant, round_)


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    with Ledger.open(tmp_path / "l.db") as led:
        _chain(led)
        yield led


def _key(cls: type[BaseModel], item: Any) -> str | tuple[str, ...]:
    key = TABLES[cls].key
    return (
        getattr(item, key[0])
        if len(key) == 1
        else tuple(v.value if hasattr(v, "value") else v for v in (getattr(item, k) for k in key))
    )


@pytest.mark.parametrize("cls", list(TABLES), ids=lambda c: c.__name__)
def test_any_unicode_text_survives_the_ledger(cls: type[BaseModel], ledger: Ledger) -> None:
    @SETTINGS
    @given(text_strategy(cls, {k: v for k, v in FIXED.items() if k in cls.model_fields}))
    def put_get(item: Any) -> None:
        ledger.put(item)
        key = _key(cls, item)
        try:
            assert ledger.get(cls, key) == item
        finally:
            table = TABLES[cls]
            where = " AND ".join(f"{k} = ?" for k in table.key)
            with ledger.write() as db:
                db.execute(
                    f"DELETE FROM {table.name} WHERE {where}",
                    [key] if isinstance(key, str) else list(key),
                )

    put_get()


@pytest.mark.parametrize("cls", list(TABLES), ids=lambda c: c.__name__)
def test_any_float_survives_the_ledger(cls: type[BaseModel], ledger: Ledger) -> None:
    """NaN and infinities too (an error statistic can be NaN): compared as JSON text,
    since NaN != NaN."""

    @SETTINGS
    @given(float_strategy(cls, {k: v for k, v in FIXED.items() if k in cls.model_fields}))
    def put_get(item: Any) -> None:
        ledger.put(item)
        back = ledger.get(cls, _key(cls, item))
        assert back is not None and back.model_dump_json() == item.model_dump_json()

    put_get()


def test_nul_and_astral_text_kept_in_queried_columns(ledger: Ledger) -> None:
    title = "a\x00b \U0001f600 \u202e\r\n\t'\"; DROP TABLE sessions; --"
    session = full(m.Session, id="nul\x00id", title=title, repo="/r\x00epo")
    ledger.put(session)
    rows = ledger.query("SELECT id, title, repo FROM sessions WHERE id = ?", ["nul\x00id"])
    assert rows == [{"id": "nul\x00id", "title": title, "repo": "/r\x00epo"}]
    assert ledger.get(m.Session, "nul\x00id") == session
    assert ledger.resolve_session("nul\x00").title == title


@SETTINGS
@given(
    st.lists(
        text_strategy(m.TelemetrySample).filter(lambda s: s.session_id is not None),
        min_size=1,
        max_size=20,
    )
)
def test_telemetry_samples_round_trip(tmp_path_factory: Any, samples: list[Any]) -> None:
    path = tmp_path_factory.mktemp("tel") / "l.db"
    with Ledger.open(path) as ledger:
        assert ledger.insert_samples(samples) == len(samples)
        back = {s.session_id: [] for s in samples}  # type: dict[str, list[Any]]
        for sid in back:
            back[sid] = ledger.samples(session_id=sid)
        for sid, got in back.items():
            sent = [s for s in samples if s.session_id == sid]
            # Every sample comes back, in time order; within one run, in arrival order
            # (samples of different runs at the same microsecond have no order to keep).
            key = lambda s: s.model_dump_json()  # noqa: E731
            assert sorted(got, key=key) == sorted(sent, key=key)
            assert [s.t_us for s in got] == sorted(s.t_us for s in sent)
            for rid in {s.run_id for s in sent}:
                assert [s for s in got if s.run_id == rid] == sorted(
                    (s for s in sent if s.run_id == rid), key=lambda s: s.t_us
                )


# ---------------------------------------------------------------------------- validation


def _errors(build: Any) -> list[tuple[tuple[Any, ...], str]]:
    with pytest.raises(ValidationError) as info:
        build()
    return [(tuple(e["loc"]), e["msg"]) for e in info.value.errors()]


WORKLOAD = {"name": "w", "command": "true"}
CASES = {
    "blank title": (lambda: m.Session(title="  ", repo="/r", contract={"workloads": [WORKLOAD]}),
                    ("title",)),
    "blank repo": (lambda: m.Session(title="t", repo="", contract={"workloads": [WORKLOAD]}),
                   ("repo",)),
    "no workloads": (lambda: m.Contract(workloads=[]), ("workloads",)),
    "nested workload name": (
        lambda: m.Session(title="t", repo="/r",
                          contract={"workloads": [{"name": "a=b", "command": "x"}]}),
        ("contract", "workloads", 0, "name")),
    "duplicate workloads": (lambda: m.Contract(workloads=[WORKLOAD, WORKLOAD]), ("workloads",)),
    "timeout": (lambda: m.Contract(workloads=[WORKLOAD], timeout_s=0), ("timeout_s",)),
    "threshold": (lambda: m.Contract(workloads=[WORKLOAD], threshold=1.5), ("threshold",)),
    "regex without group": (lambda: m.Metric(source="regex", pattern="x+"), ("pattern",)),
    "bad regex": (lambda: m.Metric(source="regex", pattern="(x"), ("pattern",)),
    "wall with pattern": (lambda: m.Metric(pattern="x"), ("pattern",)),
    "json without key": (lambda: m.Metric(source="json"), ("pattern",)),
    "bad direction": (lambda: m.Metric(direction="sideways"), ("direction",)),
    "bad commit": (lambda: m.Snapshot(commit="xyz", ref="r"), ("commit",)),
    "variant named baseline": (
        lambda: m.Variant(session_id="s", name="baseline", snapshot={"commit": COMMIT, "ref": "r"}),
        ("name",)),
    "blocks": (lambda: m.Round(session_id="s", baseline_id="b", min_blocks=10, max_blocks=5),
               ("max_blocks",)),
    "handed off": (lambda: m.PreflightAnswer(session_id="s", question="lifetime",
                                             kind="handed_off"), ("concern_area",)),
    "not applicable": (lambda: m.PreflightAnswer(session_id="s", question="lifetime",
                                                 kind="not_applicable"), ("text",)),
    "measured": (lambda: m.PreflightAnswer(session_id="s", question="residency",
                                           kind="measured"), ("text",)),
    "hypothesis status": (lambda: m.Hypothesis(session_id="s", title="t", status="maybe"),
                          ("status",)),
    "checklist number": (lambda: m.ChecklistItem(number=15), ("number",)),
    "disposition choice": (lambda: m.Disposition(session_id="s", variant_id="v", choice="ship"),
                           ("choice",)),
    "unknown field": (lambda: m.Hooks(setupp="x"), ("setupp",)),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_validation_errors_name_the_field(case: str) -> None:
    build, loc = CASES[case]
    errors = _errors(build)
    assert [e[0] for e in errors] == [loc], errors
    assert all(msg.strip() for _, msg in errors)


def test_assignment_is_validated_with_the_field_named() -> None:
    r = m.Round(session_id="s", baseline_id="b")
    with pytest.raises(ValidationError) as info:
        r.max_blocks = 3
    assert info.value.errors()[0]["loc"] == ("max_blocks",)
    assert r.max_blocks == 30
