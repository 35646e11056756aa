"""--budget and --threshold read ASCII decimal numbers only, within sane limits, and a bad
one is refused in one line naming the option, exit 2 (tester: nan accepted, `1_0%` read as
10%, `٥%` as 5%, 1e-9 shown as ±1e-07%, a pydantic message for `round --budget nan`)."""

from __future__ import annotations

import pytest

from tui.cli import main


def _err(capsys, tmp_path, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    try:
        code = main(["--ledger", str(tmp_path / "l.db"), *args])
    except SystemExit as exc:  # argparse's own refusal
        code = int(exc.code or 0)
    _, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize("cmd", ["baseline", "round"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1_0", "٥"])
def test_a_bad_budget_is_refused_naming_the_option(capsys, tmp_path, cmd, value):
    code, err = _err(capsys, tmp_path, cmd, "nosuchsession", f"--budget={value}")
    assert code == 2 and "--budget" in err and "positive number of seconds" in err, err
    assert len(err.strip().splitlines()) == 1 and "Input should" not in err


@pytest.mark.parametrize("cmd", ["baseline", "round"])
@pytest.mark.parametrize("value", ["1_0%", "٥%", "1e-9", "0.0001", "150%", "1", "nan", "-2%"])
def test_a_bad_threshold_is_refused_naming_the_option(capsys, tmp_path, cmd, value):
    code, err = _err(capsys, tmp_path, cmd, "nosuchsession", f"--threshold={value}")
    assert code == 2 and f"--threshold {value}" in err, err
    assert len(err.strip().splitlines()) == 1


def test_good_thresholds_read_as_typed():
    import argparse

    from tui.commands.run_opts import threshold_of

    for text, want in (("5%", 0.05), ("0.05", 0.05), (" 2.5% ", 0.025), (".1", 0.1)):
        assert threshold_of(argparse.Namespace(threshold=text)) == pytest.approx(want)


def test_runs_above_the_default_maximum_raise_it(capsys, tmp_path):
    # the advice "--runs 100" must run as printed: the maximum follows a larger minimum
    code, err = _err(capsys, tmp_path, "baseline", "nosuchsession", "--runs", "100")
    assert "--max-runs" not in err and "nosuchsession" in err, err
    code, err = _err(capsys, tmp_path, "baseline", "x", "--runs", "100", "--max-runs", "50")
    assert code == 2 and "--max-runs 50 is below --runs 100" in err
