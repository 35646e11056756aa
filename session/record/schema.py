"""The JSON Schema of the "gpuopt-session" format, generated from the record's model.

`json_schema()` is the schema of `SessionExport.dump()`; docs/decision_record.schema.json
holds its text (`schema_text()`), and a test keeps the two equal. Regenerate the file with
`python -m session.record.schema > docs/decision_record.schema.json`.
"""

from __future__ import annotations

import json
from typing import Any

from session.record.model import FORMAT, FORMAT_VERSION, SessionExport


def json_schema() -> dict[str, Any]:
    """The schema of the JSON export: keys as the format spells them ("class"), as dumped;
    every number may be null, as `to_json` writes a non-finite figure."""
    schema = _nullable_numbers(SessionExport.model_json_schema(by_alias=True, mode="serialization"))
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{FORMAT} version {FORMAT_VERSION}",
    }
    return {**head, **{k: v for k, v in schema.items() if k != "title"}}


def _nullable_numbers(node: Any) -> Any:
    if isinstance(node, list):
        return [_nullable_numbers(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _nullable_numbers(v) for k, v in node.items()}
    if out.get("type") == "number":
        out["type"] = ["number", "null"]
    return out


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
