"""Regenerate screenshots/ from the real `gpuopt demo` flow: an SVG and a PNG of every screen.

    python scripts/screenshots.py [--quick] [--only NAME] [--no-png]

Nothing is staged: a demo repository is made, a new user's demo session is opened (what
`gpuopt demo` shows first), and a second demo session is run through the whole method with
real measurements (what `gpuopt demo --no-tui` runs: baseline, hypotheses, variants, round,
residuals, decisions). Each screen of the app is then pictured on that ledger at 120x40 and
80x24, with this machine's own telemetry (no GPU here says so). The telemetry app is shown
on a replayed scenario, labelled REPLAY; the served review is pictured in headless Chromium
when chromium and chromedriver are installed. PNGs come from Chromium (faithful to the SVG's
fonts), else from cairosvg. A full run writes screenshots/MANIFEST.json: the commit, and a
hash of the source files of the screens pictured, which tests/test_screenshots_fresh.py
holds to the current files.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = ((120, 40), (80, 24))
MONO_FONT = "DejaVu Sans Mono"  # for cairosvg's PNGs; fonts-dejavu-core on Debian
OUT = ROOT / "screenshots"
MANIFEST = OUT / "MANIFEST.json"
COMMAND = "python scripts/screenshots.py"
# What the pictures show: a change to any of these files makes them stale
# (tests/test_screenshots_fresh.py compares this hash with the manifest's).
SOURCES = ("tui/screens", "tui/widgets", "tui/gpuopt.tcss", "session/record")


def source_files(root: Path = ROOT) -> dict[str, str]:
    """sha256 of every source file the screens are drawn from, by path from root."""
    found: dict[str, str] = {}
    for entry in SOURCES:
        top = root / entry
        files = [top] if top.is_file() else sorted(top.rglob("*"))
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                found[f.relative_to(root).as_posix()] = hashlib.sha256(f.read_bytes()).hexdigest()
    return dict(sorted(found.items()))


def source_hash(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def pictures() -> dict[str, str]:
    return {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(OUT.iterdir())
        if f.suffix in (".svg", ".png")
    }


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def write_manifest(quick: bool, wall_s: float) -> None:
    """Which commit and which source files the pictures were made from."""
    files = source_files()
    manifest = {
        "made_with": COMMAND + (" --quick" if quick else ""),
        "commit": git("rev-parse", "HEAD"),
        "sources_differ_from_commit": bool(git("status", "--porcelain", "--", *SOURCES)),
        "wall_s": round(wall_s),
        "source_hash": source_hash(files),
        "sources": files,
        "pictures": pictures(),
        "kept_from_an_earlier_run": [] if can_serve() else [SERVED],
    }
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(MANIFEST.relative_to(ROOT), flush=True)


def to_png(svg: Path, size: tuple[int, int]) -> None:
    png = svg.with_suffix(".png")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        w, h = size
        window = f"{w * 12 + 40},{h * 24 + 90}"  # the SVG's own size at Textual's cell size
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={png}",
                f"--window-size={window}",
                svg.as_uri(),
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
        if png.exists():
            return
    import cairosvg

    # Textual's SVG asks for Fira Code from the web, which cairosvg cannot load: its fallback
    # is a proportional font whose runs overflow their cells (a dialog's border spills, a
    # column drifts). A local monospace font of the same advance keeps every cell in place.
    text = svg.read_text(encoding="utf-8").replace(
        "font-family: Fira Code, monospace;", f'font-family: "{MONO_FONT}", monospace;'
    )
    cairosvg.svg2png(bytestring=text.encode(), write_to=str(png))


Drive = Callable[[Any], Awaitable[None]]


async def picture(name: str, make_app: Callable[[], Any], drive: Drive, png: bool) -> None:
    for size in SIZES:
        app = make_app()
        async with app.run_test(size=size) as pilot:
            await drive(pilot)
            svg = OUT / f"{name}-{size[0]}x{size[1]}.svg"
            app.save_screenshot(str(svg))
        if png:
            to_png(svg, size)
        print(svg.relative_to(ROOT), flush=True)


def keys(*pressed: str, wait_s: float = 0.0) -> Drive:
    async def drive(pilot: Any) -> None:
        await settle(pilot)
        for k in pressed:
            await pilot.press(k)
            await settle(pilot)
        await body_built(pilot)
        if wait_s:  # the palette searches on a timer
            await pilot.pause(wait_s)
        else:
            await pilot.app.workers.wait_for_complete()
        await settle(pilot)

    return drive


async def settle(pilot: Any, rounds: int = 3) -> None:
    for _ in range(rounds):
        await pilot.pause()


async def body_built(pilot: Any, timeout_s: float = 10.0) -> None:
    """The step in front is built on a timer after the first frame: wait for it."""
    pane_of = getattr(pilot.app.screen, "pane", None)
    deadline = time.monotonic() + timeout_s
    while pane_of is not None and time.monotonic() < deadline:
        try:
            if pane_of().built_body:
                break
        except Exception:  # not mounted yet
            pass
        await pilot.pause(0.05)
    await settle(pilot)


def run_demo_flow(db: Path, repo: Path, quick: bool) -> str:
    """The whole method on a demo session, as `gpuopt demo --no-tui` runs it."""
    from session.ledger_access import Ledger
    from tui.commands.run_opts import engine_monitor
    from tui.demo.flow import demo_session, run_flow

    with Ledger.open(db) as ledger:
        session = demo_session(repo)
        ledger.put(session)
        kw: dict[str, Any] = {"runs": 12, "min_blocks": 6, "max_blocks": 12} if quick else {}
        t0 = time.monotonic()
        with engine_monitor(ledger, session.id) as monitor:
            outcome = run_flow(
                ledger, session, say=lambda s: print("  " + s, flush=True), monitor=monitor, **kw
            )
        print(f"demo flow: {time.monotonic() - t0:.0f} s, {outcome.get('decisions')}", flush=True)
        return session.id


async def shoot(only: str | None, png: bool, quick: bool) -> None:
    from session.ledger_access import Ledger
    from tui.app import GpuoptApp
    from tui.demo.repo import create_repo
    from tui.demo.start import start_session

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["HOME"] = tmp  # the title bar shows ~/… paths, as on anyone's machine
        repo = create_repo(home / "demo-softmax")
        fresh_db = home / "fresh.db"
        with Ledger.open(fresh_db) as ledger:
            fresh, _ = start_session(ledger, repo)
        wanted: list[tuple[str, Callable[[], Any], Drive]] = []

        def fresh_app() -> Any:
            return GpuoptApp(fresh_db, session_id=fresh.id, telemetry="live")

        wanted += [
            ("01-demo-opened", fresh_app, keys()),
            ("02-demo-contract", fresh_app, keys("1")),
            ("03-demo-hypothesis-written", fresh_app, keys("4")),
            ("04-demo-add-variant", fresh_app, keys("5", "a", "enter")),
            ("05-help", fresh_app, keys("2", "question_mark")),
            ("06-palette", fresh_app, keys("ctrl+p", *"hypothesis", wait_s=0.8)),
        ]
        fresh_names = [n for n, _, _ in wanted]
        if not only or not any(only in n for n in fresh_names):  # the flow's pictures too
            db = home / "ledger.db"
            sid = run_demo_flow(db, repo, quick)

            def done_app(**kw: Any) -> Callable[[], Any]:
                return lambda: GpuoptApp(db, telemetry="live", export_dir=home, **kw)

            session_app = done_app(session_id=sid)
            steps = [
                "contract",
                "baseline",
                "preflight",
                "hypotheses",
                "round",
                "results",
                "disposition",
                "record",
            ]
            for i, step in enumerate(steps):
                wanted.append((f"1{i}-{step}", session_app, keys(str(i + 1))))
            wanted += [
                ("20-decide-form", session_app, keys("7", "d")),
                ("21-session-list", done_app(), keys()),
                ("22-review", done_app(review=True, readonly=True), keys()),
            ]
        for name, make, drive in wanted:
            if only and only not in name:
                continue
            await picture(name, make, drive, png)
        if not only or "telemetry" in only:
            await telemetry_pictures(png)
        if not only or "served" in only:
            served_picture(home / "ledger.db" if (home / "ledger.db").exists() else fresh_db)


async def telemetry_pictures(png: bool) -> None:
    """`gpuopt telemetry` on a replayed scenario (every line says REPLAY)."""
    from tui.telemetry_app import TelemetryApp

    async def drive(pilot: Any) -> None:
        app = pilot.app
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(app.processes.values()):
            await pilot.pause(0.2)  # a replayed run is on: its foreign process is listed
        await pilot.pause(1.0)

    await picture(
        "30-telemetry-replay",
        lambda: TelemetryApp(scenario="foreign-process", interval=0.25),
        drive,
        png,
    )


SERVED = "40-served-review-browser.png"


def can_serve() -> bool:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    return bool(chromium and shutil.which("chromedriver"))


def served_picture(db: Path) -> None:
    """The review served in a browser, pictured by headless Chromium (selenium)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not (chromium and driver_path):
        print(f"served review: {SERVED} kept (needs chromium and chromedriver)", flush=True)
        return
    import socket

    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = subprocess.Popen(
        [sys.executable, "-m", "tui.serve", "--ledger", str(db), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    opts = Options()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900"):
        opts.add_argument(arg)
    driver = None
    try:
        time.sleep(2.0)
        driver = webdriver.Chrome(service=Service(driver_path), options=opts)
        driver.get(f"http://127.0.0.1:{port}/")
        time.sleep(6.0)  # the app starts in its own process and draws its first frame
        target = OUT / SERVED
        driver.save_screenshot(str(target))
        print(target.relative_to(ROOT), flush=True)
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only pictures whose name contains this")
    ap.add_argument("--no-png", action="store_true")
    ap.add_argument("--quick", action="store_true", help="a short baseline and round")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    if not args.only:  # the pictures of screens that no longer exist go too
        for old in [*OUT.glob("*.svg"), *OUT.glob("*.png"), MANIFEST]:
            if old.name != SERVED or can_serve():  # kept when it cannot be made anew
                old.unlink(missing_ok=True)
    t0 = time.monotonic()
    asyncio.run(shoot(args.only, not args.no_png, args.quick))
    if not args.only and not args.no_png:  # a partial set is not what the manifest vouches for
        write_manifest(args.quick, time.monotonic() - t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
