"""Secrets are kept out of the ledger and every export by value, not only by name (issue
25, item 5): token shapes a workload prints, credentials in a *_URL, values of
secret-looking variables gpuopt passes or sees; a contract's --env secret is refused."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_new_validation import new, one_line

from ledger import Ledger
from measure.redact import is_secret, redact
from measure.runner import run_command
from session import models as m

ROOT = Path(__file__).resolve().parents[2]
# Made-up values of each shape (none is a real credential).
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
ANTHROPIC = "sk-ant-api03-" + "x" * 40
OPENAI = "sk-proj-" + "Y" * 40
SLACK = "xoxb-1234567890-0987654321-" + "z" * 24
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
URL_PASSWORD = "hunter2pass"
DB_URL = f"postgres://admin:{URL_PASSWORD}@db.example:5432/prod"
AUTH_VALUE = "Bearer-abcdef0123456789"
SHAPES = [GITHUB, GITHUB_PAT, AWS_ID, HF, ANTHROPIC, OPENAI, SLACK, JWT]


def test_every_token_shape_is_redacted_in_any_text() -> None:
    text = " ".join(SHAPES) + f" aws_secret_access_key={AWS_SECRET} url {DB_URL}"
    out = redact(text, env={})
    for secret in [*SHAPES, AWS_SECRET, URL_PASSWORD]:
        assert secret not in out, secret
    assert "postgres://admin:<redacted password in a URL>@db.example" in out
    assert redact("a sha ab12cd34 and a path /usr/lib/x_key.so", env={}) == (
        "a sha ab12cd34 and a path /usr/lib/x_key.so"
    )


def test_values_of_secret_looking_variables_gpuopt_sees() -> None:
    assert is_secret("DATABASE_URL", DB_URL) and not is_secret("DOCS_URL", "https://x.org/a")
    assert is_secret("ANTHROPIC_AUTH", AUTH_VALUE)
    assert not is_secret("GIT_AUTHOR_NAME", "Ada Lovelace")


def test_stored_output_of_a_run_holds_no_secret(tmp_path: Path) -> None:
    printed = " ".join(SHAPES)
    env = {"DATABASE_URL": DB_URL, "ANTHROPIC_AUTH": AUTH_VALUE}
    res = run_command(
        f"echo {printed}; echo $DATABASE_URL $ANTHROPIC_AUTH; echo {printed} >&2; exit 3",
        tmp_path,
        env=env,
    )
    stored = res.stdout_tail + res.stderr_tail + (res.error or "")
    for secret in [*SHAPES, DB_URL, URL_PASSWORD, AUTH_VALUE]:
        assert secret not in stored, secret
    assert "<redacted DATABASE_URL>" in stored and "<redacted ANTHROPIC_AUTH>" in stored


@pytest.mark.slow
def test_a_secret_given_as_contract_env_is_refused(make_repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    repo = make_repo()
    ledger = tmp_path / "l.db"
    for spec in (f"w=HF_TOKEN={HF}", f"w=EXTRA={GITHUB}", f"w=DATABASE_URL={DB_URL}"):
        line = one_line(new(tmp_path, ledger, repo, "--env", spec))
        assert "looks secret" in line and "export " in line, line
        assert HF not in line and GITHUB not in line and URL_PASSWORD not in line
    assert not ledger.exists()  # nothing was written


def test_exports_hold_no_secret_even_from_an_older_ledger(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    workload = m.Workload(name="w", command=f"echo {GITHUB}", env={"HF_TOKEN": HF, "N": "1"})
    s = m.Session(title=f"t {JWT}", repo=str(tmp_path), contract=m.Contract(workloads=[workload]))
    with Ledger.open(db) as ledger:  # as a gpuopt from before the refusal stored it
        ledger.put(s)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for fmt in ("md", "json"):
        out = tmp_path / f"rec.{fmt}"
        done = subprocess.run(
            [sys.executable, "-m", "tui", "--ledger", str(db), "export", s.id, "--format", fmt,
             "-o", str(out)],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        text = out.read_text()
        for secret in (GITHUB, HF, JWT):
            assert secret not in text, (fmt, secret)
        if fmt == "json":
            json.loads(text)  # still valid JSON
    raw = sqlite3.connect(db)
    try:  # the ledger itself is left as it was (nothing is rewritten behind the person)
        assert HF in raw.execute("SELECT data FROM sessions").fetchone()[0]
    finally:
        raw.close()
