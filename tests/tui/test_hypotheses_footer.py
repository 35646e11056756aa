"""The Hypotheses step's footer names `+` (add evidence to the selected hypothesis): its
Next line tells people to press it, and a new user walking `gpuopt demo` looked for it
among the keys shown and did not find it. At 80 columns the footer still shows ^q quit."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey
from tui_helpers import SID, sample_ledger, settle, steady_app, step_keys, until


def _shown_keys(app) -> dict[str, tuple[str, int]]:
    """Each footer key's description and the column its right edge reaches; the palette
    key (docked right) as the edge every other key must stay left of, to be seen."""
    footer = app.screen.query_one(Footer)
    out = {}
    for k in footer.query(FooterKey):
        out[k.key_display or k.key] = (k.description, k.region.right)
        if k.description == "palette":
            out["edge"] = ("", k.region.x)
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_hypotheses_footer_lists_the_evidence_key(tmp_path: Path, size) -> None:
    db = sample_ledger(tmp_path / "l.db")
    app = steady_app(db, session_id=SID)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await step_keys(pilot, "4")
        await settle(pilot)
        await until(
            pilot, lambda: any(k.description == "save" for k in app.screen.query(FooterKey))
        )
        keys = _shown_keys(app)
        assert "+" in keys, keys
        assert keys["+"][0] == "attach", keys  # its tooltip: add evidence
        edge = keys.pop("edge")[1] if "edge" in keys else size[0]
        assert keys["+"][1] <= edge, keys
        quit_ = next((v for v in keys.values() if v[0] == "quit"), None)
        assert quit_ is not None and quit_[1] <= edge, keys
