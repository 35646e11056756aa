"""`gpuopt sessions` on a ledger path that does not exist (a typo, another machine's path)."""

from __future__ import annotations

from tui.cli import main


def test_a_missing_ledger_is_named_not_just_empty(tmp_path, capsys):
    path = tmp_path / "nowhere" / "typo.db"
    assert main(["--ledger", str(path), "sessions"]) == 0
    out, err = capsys.readouterr()
    # Off a terminal stdout carries only the tab-separated rows: none here, and the
    # reason is said on stderr.
    assert out == ""
    assert "no ledger" in err.lower() and "typo.db" in err
    assert not path.exists() and not path.parent.exists()  # and nothing was created
