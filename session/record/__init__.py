"""The decision record: everything a session decided, as one model and one exporter per
format over one shared table layer (as hyperfine's exporters are).

- `gather(ledger, session) -> SessionExport` (model.py): the record read once, through
  `session.read_model`; every verdict in it from `session.verdicts`.
- `build_export(ledger, session) -> dict`: its JSON dump, the "gpuopt-session" format
  (docs/decision_record.md). Later versions only add keys: the documented ones keep their
  meaning.
- `to_json(data)`, `to_markdown(data)`: the exporters; each takes the model or its dump.
- The markdown: summary.py first, hypotheses.py, then the details (contract.py,
  baselines.py, preflight.py, rounds.py, checks.py, decisions.py, evidence.py, plan_md.py),
  all through table.py (cells, tables, code blocks, words for stored values).
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any

from measure.redact import Redactor, is_secret
from session import models as m
from session.md import md_cell, md_code, md_table, visible_controls
from session.record import markdown
from session.record.model import FORMAT, FORMAT_VERSION, SessionExport, gather
from session.record.plan import measurement_plan

if TYPE_CHECKING:
    from ledger import Ledger

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "SessionExport",
    "build_export",
    "gather",
    "md_cell",
    "md_code",
    "md_table",
    "measurement_plan",
    "to_json",
    "to_markdown",
    "visible_controls",
    "without_secrets",
]


def build_export(ledger: Ledger, session: m.Session) -> dict[str, Any]:
    """The record of a session as the JSON format's plain dict."""
    return gather(ledger, session).dump()


# The record's keys whose values map variable names to values: a workload's --env and a
# fingerprint's variables.
VARIABLE_MAPPINGS = frozenset({"env", "variables"})


def without_secrets(data: SessionExport | dict[str, Any]) -> dict[str, Any]:
    """The record's dump with every secret replaced by `<redacted …>`: token shapes
    anywhere, and the values of secret-looking variables, of the contract's --env (a
    ledger from before they were refused) and of this process's environment."""
    plain = data.dump() if isinstance(data, SessionExport) else data
    found: dict[str, str] = {}

    def collect(value: Any, variables: bool = False) -> None:
        # Only a mapping of variables names a secret: other mappings of the record are
        # keyed by what the user named (a workload "api-token-bench" maps to its metric).
        if isinstance(value, dict):
            for k, v in value.items():
                if variables and isinstance(k, str) and isinstance(v, str) and is_secret(k, v):
                    found.setdefault(k, v)
                collect(v, k in VARIABLE_MAPPINGS)
        elif isinstance(value, list):
            for v in value:
                collect(v)

    collect(plain)
    hide = Redactor({**os.environ, **found})

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return hide(value)
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    return scrub(plain)


def to_markdown(data: SessionExport | dict[str, Any], fit: int | None = None) -> str:
    """The markdown record, secrets redacted (see without_secrets). The profile section
    is not part of the JSON form, so it is carried over (redacted too) by hand. `fit`:
    laid out for a terminal view that many columns wide (None: the file's layout)."""
    if not isinstance(data, SessionExport):
        return markdown.to_markdown(without_secrets(data), fit)
    redacted = SessionExport.model_validate(without_secrets(data))
    redacted._profile_lines = without_secrets({"lines": data.profile_lines})["lines"]
    return markdown.to_markdown(redacted, fit)


def to_json(data: SessionExport | dict[str, Any]) -> str:
    """Strict JSON: a non-finite stored figure (NaN, ±Infinity) is null, never a bare token
    a JSON parser refuses. Secrets redacted (see without_secrets)."""
    plain = without_secrets(data)
    return (
        json.dumps(_finite(plain), ensure_ascii=False, indent=2, default=str, allow_nan=False)
        + "\n"
    )


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
