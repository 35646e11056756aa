"""The JSON export's schema: generated from the record's model, committed beside the docs,
held to docs/decision_record.md, and met by a real export (checked by a small validator of
the schema keywords pydantic writes, not by the model that made both)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from method_full import build_full_session, texts

from ledger import Ledger
from session import models as m
from session.record import build_export, to_json
from session.record import rows as r
from session.record.model import SessionExport
from session.record.schema import json_schema, schema_text
from session.residuals import ROUND_SUMMARY_FIELDS

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCHEMA_FILE = DOCS / "decision_record.schema.json"


# ---------------------------------------------------------------------------- a validator


def errors(schema: dict[str, Any], value: Any, node: dict[str, Any] | None = None,
           at: str = "$") -> list[str]:  # fmt: skip
    """Where `value` breaks `schema` (type, properties, required, items, anyOf, $ref,
    additionalProperties: the keywords the generated schema uses)."""
    node = schema if node is None else node
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        return errors(schema, value, schema["$defs"][name], at)
    if "anyOf" in node:
        found = [errors(schema, value, option, at) for option in node["anyOf"]]
        return [] if any(not e for e in found) else [f"{at}: no option of anyOf fits"]
    kinds = node.get("type")
    if kinds is not None:
        names = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is(value, k) for k in names):
            return [f"{at}: {type(value).__name__} is not {kinds}"]
    out: list[str] = []
    if isinstance(value, dict):
        props = node.get("properties", {})
        out += [f"{at}: {k} missing" for k in node.get("required", []) if k not in value]
        extra = node.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                out += errors(schema, v, props[k], f"{at}.{k}")
            elif extra is False:
                out.append(f"{at}: {k} not allowed")
            elif isinstance(extra, dict):
                out += errors(schema, v, extra, f"{at}.{k}")
    if isinstance(value, list) and "items" in node:
        for i, v in enumerate(value):
            out += errors(schema, v, node["items"], f"{at}[{i}]")
    return out


def _is(value: Any, kind: str) -> bool:
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "null": value is None,
    }[kind]


def committed() -> dict[str, Any]:
    assert SCHEMA_FILE.exists(), "docs/decision_record.schema.json is missing"
    data: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return data


# ---------------------------------------------------------------------------- the tests


def test_the_committed_schema_is_the_models() -> None:
    # regenerate: python -m session.record.schema > docs/decision_record.schema.json
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text()


def test_every_section_is_typed() -> None:
    """No section of the record is a bare dict: each list holds a model's rows."""
    schema = json_schema()
    for key, prop in schema["properties"].items():
        if prop.get("type") == "array":
            assert "$ref" in prop["items"], f"{key}: its rows have no model"
        elif key not in ("format", "version"):
            assert "$ref" in prop or "anyOf" in prop, f"{key} is untyped"


@pytest.mark.parametrize(
    ("row", "stored"),
    [
        (r.HypothesisRow, m.Hypothesis),
        (r.HistoryRow, m.HypothesisEvent),
        (r.EvidenceRow, m.Evidence),
        (r.AuditRow, m.Audit),
        (r.ResidualRow, m.Residual),
        (r.StepRow, m.StepStatus),
        (r.WorkloadSpec, m.Workload),
        (r.ContractRow, m.Contract),
        (r.ErrorStatsRow, m.ErrorStats),
        (r.EnvironmentRow, m.EnvironmentFingerprint),
        (r.GpuRow, m.GpuInfo),
    ],
)
def test_rows_name_every_stored_field_in_its_order(row: Any, stored: Any) -> None:
    """A row built from a stored model's dump declares each of its fields, in order: a
    new stored field is typed in the record (not an untyped extra at the end)."""
    ours = [f for f in row.model_fields if f in stored.model_fields]
    assert ours == list(stored.model_fields)


def test_the_round_summary_row_has_the_methods_fields_in_order() -> None:
    assert list(r.RoundSummaryRow.model_fields) == list(ROUND_SUMMARY_FIELDS)


def _doc_rows() -> list[tuple[list[str], list[str]]]:
    """The JSON format's table in the docs: (keys, the backticked names in its content)."""
    text = (DOCS / "decision_record.md").read_text(encoding="utf-8")
    table = text.split("## The JSON format", 1)[1].split("\n### ", 1)[0]
    out = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[0] in ("key", "---"):
            continue
        names = re.findall(r"`([^`]+)`", cells[1])
        out.append((re.findall(r"`([^`]+)`", cells[0]),
                    [n for n in names if re.fullmatch(r"[a-z_]+", n)]))  # fmt: skip
    return out


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return _resolve(schema, schema["$defs"][node["$ref"].removeprefix("#/$defs/")])
    if "items" in node:
        return _resolve(schema, node["items"])
    return node


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """`rounds[].search_round` in the schema."""
    node = schema
    for part in path.replace("[]", "").split("."):
        props = _resolve(schema, node).get("properties", {})
        assert part in props, f"the docs name {path}: the schema has no {part}"
        node = props[part]
    return node


def _names_under(schema: dict[str, Any], node: dict[str, Any], seen: set[str]) -> set[str]:
    """Every property name in a section, at any depth."""
    out: set[str] = set()
    for option in node.get("anyOf", [node]):
        if "$ref" in option:
            name = option["$ref"].removeprefix("#/$defs/")
            if name in seen:
                continue
            seen.add(name)
        target = _resolve(schema, option)
        for key, prop in target.get("properties", {}).items():
            out |= {key, *_names_under(schema, prop, seen)}
    return out


def test_the_docs_describe_the_schema() -> None:
    """The docs' table names every section of the schema, and every field it names is
    in that section: the format the docs describe is the one written."""
    schema = committed()
    rows = _doc_rows()
    documented = {k for keys, _ in rows for k in keys if "." not in k}
    assert documented == set(schema["properties"])
    for keys, names in rows:
        fields = set().union(*(_names_under(schema, _at(schema, k), set()) for k in keys))
        unknown = [n for n in names if n not in fields]
        assert not unknown, f"{', '.join(keys)}: the docs name {unknown}, the schema has not"


def test_a_real_export_meets_the_schema(tmp_path: Path) -> None:
    schema = committed()
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = build_full_session(ledger, texts())
        data = json.loads(to_json(build_export(ledger, session)))
    assert data["hypotheses"] and data["rounds"] and data["correctness"] and data["audits"]
    assert errors(schema, data) == []
    # and the validator can fail: a row without its id, a figure as text
    data["hypotheses"][0].pop("id")
    data["rounds"][0]["comparisons"][0]["ratio"] = "fast"
    found = errors(schema, data)
    assert "$.hypotheses[0]: id missing" in found
    assert any(e.startswith("$.rounds[0].comparisons[0].ratio") for e in found)


def test_a_broken_variants_export_meets_the_schema(tmp_path: Path) -> None:
    """NaN outputs, a failed check's statistics and stress trials: figures written null."""
    from test_broken_export import build_broken_session

    with Ledger.open(tmp_path / "ledger.db") as ledger:
        data = json.loads(to_json(build_export(ledger, build_broken_session(ledger))))
    assert any(c["stats"] for c in data["correctness"])
    assert errors(committed(), data) == []


def test_an_export_reads_back_as_the_same_record(tmp_path: Path) -> None:
    """The typed sections lose nothing: the dump validates into the model and dumps the
    same, key for key."""
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        session = build_full_session(ledger, texts())
        data = build_export(ledger, session)
    again = SessionExport.model_validate(data).dump()
    assert json.dumps(again) == json.dumps(data)  # same keys, same order, same values
