"""session.format: one way to write each figure, for the CLI, the app and the record."""

from __future__ import annotations

import math

import pytest

from session import format as fmt


def test_ratio_and_interval_three_decimals() -> None:
    assert fmt.ratio_text(0.73104) == "0.731"
    assert fmt.ci_text(0.73104, 0.7549) == "0.731–0.755"
    assert fmt.ratio_text(None) == fmt.DASH
    assert fmt.ci_text(0.9, None) == fmt.DASH
    assert fmt.ratio_text(math.nan) == fmt.DASH


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (42.4, "42s"),
        (65, "1m05s"),
        (3599.6, "1h00m"),
        (7380, "2h03m"),
        (None, "—"),
        (-1, "—"),
    ],
)
def test_eta(seconds: float | None, text: str) -> None:
    assert fmt.eta_text(seconds) == text


def test_bytes_one_formatter_with_sign() -> None:
    assert fmt.bytes_text(512) == "512 B"
    assert fmt.bytes_text(12 * 2**10) == "12 KiB"
    assert fmt.bytes_text(3 * 2**20 + 2**19) == "3.5 MiB"
    assert fmt.bytes_text(5 * 2**30) == "5 GiB"
    # three significant digits: 1.95 GiB beside a 2 GiB baseline is a 2.5% change, not "2.0"
    assert fmt.bytes_text(1.95 * 2**30) == "1.95 GiB"
    assert fmt.bytes_text(48.25 * 2**20) == "48.2 MiB"
    assert fmt.bytes_text(1000 * 2**10) == "1000 KiB"
    assert fmt.bytes_text(-3 * 2**20, signed=True) == "−3 MiB"
    assert fmt.bytes_text(0, signed=True) == "±0 B"
    assert fmt.bytes_text(None) == "—"
    assert fmt.bytes_text(math.nan) == "—"


def test_one_bytes_formatter_at_every_door() -> None:
    """measure writes bytes in its own words and may import nothing of ours: its formatter
    is the one, and every other name for it is that same function's output."""
    from measure.numerics import format_bytes
    from session import verdicts

    for n in (0, 512, 1536, 12 * 2**10, 150 * 2**20, 5 * 2**30, 3 * 2**40):
        assert fmt.bytes_text(n) == format_bytes(n) == verdicts.bytes_text(n)


def test_an_interval_says_its_confidence_when_asked() -> None:
    assert fmt.ci_text(0.731, 0.755, 0.998) == "99.8% CI 0.731–0.755"
    assert fmt.ci_text(0.731, 0.755, 0.99) == "99% CI 0.731–0.755"
    assert fmt.ci_text(None, 0.755, 0.99) == fmt.DASH  # no interval: no label either


def test_every_verdict_word_has_a_distinct_colour() -> None:
    from measure.vocabulary import Verdict

    for v in Verdict:
        assert v.value in fmt.VERDICT_STYLE, v
    assert "BROKEN" in fmt.VERDICT_STYLE
    speed_words = [w for w in fmt.VERDICT_STYLE if w != "FAILED"]
    assert len({fmt.VERDICT_STYLE[w] for w in speed_words}) == len(speed_words)
    assert fmt.verdict_style("whatever") == "bold"
