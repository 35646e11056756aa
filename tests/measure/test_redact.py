"""Values of secret-looking environment variables never reach stored output or errors."""

from __future__ import annotations

from pathlib import Path

from ledger import Ledger
from measure.redact import is_secret_name, redact
from measure.runner import run_command
from session import conduct as c
from session import models as m

API_KEY = "sk-live-4f1d9a7c2e"
TOKEN = "ghp_Zq81xYtokenvalue"
PASSWORD = "hunter2-correct-horse"


def test_which_names_are_secret():
    for name in ("GH_TOKEN", "token", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "OPENAI_API_KEY",
                 "HF_TOKEN", "client_secret", "MY_KEY"):  # fmt: skip
        assert is_secret_name(name), name
    for name in ("PATH", "KEYBOARD", "HOME", "KEY", "MONKEY", "KEYS_DIR", "CUDA_VISIBLE_DEVICES"):
        assert not is_secret_name(name), name


def test_redact_replaces_values_longest_first_and_keeps_the_rest():
    env = {"A_KEY": "abcd", "LONG_KEY": "abcdefgh", "SHORT_TOKEN": "x", "PATH": "/usr/bin"}
    text = "abcdefgh then abcd, x and /usr/bin"
    out = redact(text, env)
    assert out == "<redacted LONG_KEY> then <redacted A_KEY>, x and /usr/bin"
    assert redact("nothing secret", {}) == "nothing secret"


def test_part_of_a_secret_left_by_a_cut_is_redacted_too():
    env = {"MY_API_KEY": "ZsecretTokenValue0123456789"}
    assert redact("ecretTokenValue0123456789\nrest", env) == ("<redacted part of MY_API_KEY>\nrest")
    assert redact("failed: bad key ZsecretTok", env) == (
        "failed: bad key <redacted part of MY_API_KEY>"
    )
    assert redact("Zsec", env) == "<redacted part of MY_API_KEY>"
    assert redact("Zse and 789", env) == "Zse and 789"  # under MIN_LENGTH: ordinary text


def test_a_tail_cut_inside_a_secret_keeps_none_of_it(tmp_path: Path, monkeypatch):
    """The stored tail is the output's last 64 KiB: a secret printed just before the cut
    used to lose its first character only."""
    from measure.runner import TAIL_BYTES

    secret = "ZsecretTokenValue0123456789abcdefghijklmn"
    monkeypatch.setenv("MY_API_KEY", secret)
    filler = TAIL_BYTES - (len(secret) - 1) - 1  # the cut falls after the first character
    res = run_command(
        f"printf '%s\\n' \"$MY_API_KEY\"; head -c {filler} /dev/zero | tr '\\0' A", tmp_path
    )
    assert res.exit_code == 0
    assert res.stdout_tail.startswith("<redacted part of MY_API_KEY>\nAAAA")
    assert secret[1:9] not in res.stdout_tail


def test_a_real_run_stores_no_secret(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SERVICE_TOKEN", TOKEN)
    command = (
        'echo "key=$OPENAI_API_KEY token=$SERVICE_TOKEN plain=$PLAIN"; '
        'echo "failed with password $DB_PASSWORD" >&2; exit 3'
    )
    res = run_command(
        command, tmp_path, env={"OPENAI_API_KEY": API_KEY, "DB_PASSWORD": PASSWORD,
                                "PLAIN": "visible"},
    )  # fmt: skip
    stored = res.stdout_tail + res.stderr_tail + res.error
    for secret in (API_KEY, TOKEN, PASSWORD):
        assert secret not in stored
    assert "key=<redacted OPENAI_API_KEY> token=<redacted SERVICE_TOKEN>" in res.stdout_tail
    assert "plain=visible" in res.stdout_tail
    assert res.error == "exited with status 3: failed with password <redacted DB_PASSWORD>"


def test_a_metric_printed_beside_a_secret_is_still_read(tmp_path: Path):
    res = run_command(
        'echo "auth $X_API_KEY"; echo "value 12.5"', tmp_path,
        env={"X_API_KEY": "12.5-secret"}, metric_source="regex",
        metric_pattern=r"value (?P<value>[0-9.]+)",
    )  # fmt: skip
    assert res.ok and res.value == 12.5 and "12.5-secret" not in res.stdout_tail


def test_runs_and_hooks_in_the_ledger_hold_no_secret(make_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    repo = make_repo(files={"value.txt": "1.00\n"})
    contract = m.Contract(
        metric=m.Metric(name="v", source=m.MetricSource.REGEX, pattern=r"(?P<value>[0-9.]+)$"),
        workloads=[
            m.Workload(
                name="read",
                command='echo "using $HF_TOKEN $MY_API_KEY" >&2; cat value.txt',
                env={"MY_API_KEY": API_KEY},
            )
        ],
        hooks=m.Hooks(setup='echo "setup with $HF_TOKEN"'),
    )
    with Ledger.open(tmp_path / "l.db") as ledger:
        session = m.Session(title="t", repo=str(repo), contract=contract)
        ledger.put(session)
        c.record_baseline(ledger, session, runs=2)
        runs = ledger.list(m.Run, session_id=session.id)
        hooks = ledger.list(m.HookRecord, session_id=session.id)
        dump = " ".join(r.model_dump_json() for r in [*runs, *hooks])
    assert runs and hooks
    assert TOKEN not in dump and API_KEY not in dump
    assert "<redacted HF_TOKEN> <redacted MY_API_KEY>" in runs[0].stderr_tail
    assert "setup with <redacted HF_TOKEN>" in hooks[0].output_tail


def test_a_preloaded_run_stores_no_secret(tmp_path: Path):
    import os
    import sys

    from measure.preload import PreloadedPython

    job = tmp_path / "job.py"
    job.write_text(
        "import os, sys\nprint(os.environ['RUN_TOKEN'])\nsys.exit(os.environ['RUN_TOKEN'])\n"
    )
    with PreloadedPython(sys.executable, ["json"], env=dict(os.environ)) as server:
        res = server.run([str(job)], tmp_path, env={"RUN_TOKEN": TOKEN, "PATH": os.environ["PATH"]})
    assert TOKEN not in res.stdout_tail + res.stderr_tail + res.error
    assert "<redacted RUN_TOKEN>" in res.stdout_tail and "<redacted RUN_TOKEN>" in res.error
