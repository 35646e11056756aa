"""`gpuopt review --serve` (issue 15 item 9): the review app served by textual-serve, opened
in a real headless Chromium through selenium; the session list and a decision record reach
the page. The terminal draws on a canvas, so what the page received is read from its
websocket (a hook put in before the page's own script), escape sequences stripped."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tui_helpers import sample_ledger

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver"
)

# Keeps every websocket message the page receives, as text, in window.__seen.
HOOK = """
(() => {
  const Orig = window.WebSocket;
  window.__seen = [];
  const keep = (d) => {
    if (typeof d === "string") window.__seen.push(d);
    else if (d instanceof ArrayBuffer) window.__seen.push(new TextDecoder().decode(d));
    else if (d instanceof Blob) d.arrayBuffer().then((b) => window.__seen.push(
      new TextDecoder().decode(b)));
  };
  function Hooked(url, protocols) {
    const ws = protocols === undefined ? new Orig(url) : new Orig(url, protocols);
    ws.addEventListener("message", (ev) => keep(ev.data));
    return ws;
  }
  Hooked.prototype = Orig.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Hooked[k] = Orig[k];
  window.WebSocket = Hooked;
})();
"""
ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]|\x1b\][^\x07]*\x07")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")


def _seen(driver: object) -> str:
    raw = "".join(driver.execute_script("return window.__seen || []"))  # type: ignore[attr-defined]
    return ANSI.sub("", raw)


def _until(driver: object, needle: str, timeout_s: float = 40.0) -> str:
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = _seen(driver)
        if needle in text:
            return text
        time.sleep(0.3)
    raise AssertionError(f"{needle!r} never reached the page; last: {text[-400:]!r}")


@pytest.mark.slow  # over 2 s at rest: kept out of the quick subset
def test_the_served_review_shows_the_sessions_and_a_decision_record(tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    db = sample_ledger(tmp_path / "l.db")
    port = _free_port()
    env = {**os.environ, "HOME": str(tmp_path)}
    server = subprocess.Popen(
        [sys.executable, "-m", "tui", "review", str(db), "--serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    opts = Options()
    opts.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900"):
        opts.add_argument(arg)
    driver = None
    try:
        _wait_port(port)
        driver = webdriver.Chrome(service=Service(str(DRIVER)), options=opts)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})
        driver.get(f"http://127.0.0.1:{port}/")
        _until(driver, "Softmax: fewer passes over the logits")  # the session list
        _until(driver, "read-only")
        keys = driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea")
        keys.send_keys("\n")  # open the session, read-only
        time.sleep(1.0)
        keys.send_keys("8")  # its decision record
        _until(driver, "Decision record")
        shot = Path(os.environ.get("GPUOPT_SERVE_SHOT", tmp_path / "served-review.png"))
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
