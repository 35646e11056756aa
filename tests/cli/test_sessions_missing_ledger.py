"""`gpuopt sessions` on a ledger path that does not exist (a typo, another machine's path)."""

from __future__ import annotations

from tui.cli import main


def test_a_missing_ledger_is_named_not_just_empty(tmp_path, capsys):
    path = tmp_path / "nowhere" / "typo.db"
    assert main(["--ledger", str(path), "sessions"]) == 0
    out = capsys.readouterr().out
    assert "no ledger" in out.lower() and "typo.db" in out
    assert not path.exists() and not path.parent.exists()  # and nothing was created
