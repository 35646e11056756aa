"""A name that looks secret is redacted only where it names a variable. A workload called
"SECRET" (or "api-token-bench") had its metric text taken for a secret: the record's
`session.metrics` maps workload names to their metric, and every name-value pair of the
record was read as a variable, so "time (no unit)" became "<redacted SECRET>" everywhere,
and "lifetime" "life<redacted part of SECRET>" (found by the record's property test)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from method_full import build_full_session, texts

from ledger import Ledger
from session.record import build_export, to_json, to_markdown


def _export(**values: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp, Ledger.open(Path(tmp) / "l.db") as ledger:
        session = build_full_session(ledger, texts(**values))
        return build_export(ledger, session)


@pytest.mark.parametrize("name", ["SECRET", "api-token-bench", "db_password"])
def test_a_workload_named_like_a_secret_leaves_the_record_alone(name: str) -> None:
    data = _export(workload_b=name)
    back = json.loads(to_json(data))
    assert back == data
    md = to_markdown(data)
    assert "redacted" not in md and "redacted" not in json.dumps(back)
    assert back["session"]["metrics"][name] == data["session"]["metrics"][name]


def test_a_secret_variable_of_a_workload_is_still_redacted() -> None:
    """The contract's --env (a ledger from before such values were refused): a
    variable whose name looks secret has its value hidden wherever it appears."""
    data = _export(env_value="hunter2-value")
    data["contract"]["workloads"][0]["env"] = {"API_TOKEN": "hunter2-value"}
    back = json.loads(to_json(data))
    assert "hunter2-value" not in json.dumps(back)
    assert "<redacted API_TOKEN>" in json.dumps(back)
    assert "hunter2-value" not in to_markdown(data)
