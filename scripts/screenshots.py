"""Regenerate screenshots/: an SVG and a PNG of every scene of the app at 120x40 and 80x24.

PYTHONPATH=. python scripts/screenshots.py [--only NAME] [--no-png]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "tui"))  # the scenes are the snapshot tests'

from scenes import SCENES, drive, make_app, steady_widgets  # noqa: E402

SIZES = ((120, 40), (80, 24))


async def shoot(out: Path, only: str | None, png: bool) -> list[Path]:
    written = []
    for scene in SCENES:
        if only and only not in scene.name:
            continue
        for w, h in SIZES:
            with tempfile.TemporaryDirectory() as tmp:
                os.environ["HOME"] = tmp  # the title bar shows ~/.local/share/gpuopt/…
                app = make_app(scene, Path(tmp))
                async with app.run_test(size=(w, h)) as pilot:
                    await drive(scene, pilot)
                    name = f"{scene.name}-{w}x{h}"
                    svg = out / f"{name}.svg"
                    app.save_screenshot(str(svg))
                    written.append(svg)
            if png:
                import cairosvg

                cairosvg.svg2png(url=str(svg), write_to=str(svg.with_suffix(".png")))
            print(svg.relative_to(ROOT), flush=True)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only scenes whose name contains this")
    ap.add_argument("--no-png", action="store_true")
    args = ap.parse_args()
    for obj, name, value in steady_widgets():
        setattr(obj, name, value)
    out = ROOT / "screenshots"
    out.mkdir(exist_ok=True)
    asyncio.run(shoot(out, args.only, not args.no_png))
    return 0


if __name__ == "__main__":
    sys.exit(main())
