"""`gpuopt review --serve`: the read-only review app in a browser, through textual-serve.

textual-serve starts one app process per browser tab; the command it runs is this
module with `--app`, which opens the ledger read-only (nothing is written, no stored
command is run). It listens on localhost unless told otherwise: from another machine,
reach it through an SSH tunnel (`ssh -L 8000:localhost:8000 gpu-box`).

    python -m tui.serve --ledger LEDGER [--host 127.0.0.1] [--port 8000]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"  # localhost only: a ledger names repositories and machines
DEFAULT_PORT = 8000


def app_command(ledger: str | Path, export_dir: str | Path | None = None) -> str:
    """The shell command textual-serve runs for each browser tab (quoted for the shell)."""
    argv = [sys.executable, "-m", "tui.serve", "--app", str(ledger)]
    if export_dir is not None:
        argv += ["--export-dir", str(export_dir)]
    return shlex.join(argv)


def serve(
    ledger: str | Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    export_dir: str | Path | None = None,
) -> None:
    """Serve the review app until interrupted (Ctrl+C)."""
    from textual_serve.server import Server  # only `--serve` pays for aiohttp

    from session.api import beyond_localhost_warning, is_local

    print(
        f"gpuopt review: serving {ledger} read-only at http://{host}:{port}"
        + (" (localhost only; from elsewhere use an SSH tunnel)" if is_local(host) else ""),
        file=sys.stderr,
    )
    warning = beyond_localhost_warning(host, port)
    if warning:
        print(f"gpuopt review: {warning}", file=sys.stderr, flush=True)
    sys.stderr.flush()
    Server(app_command(ledger, export_dir), host=host, port=port, title="gpuopt review").serve()


def run_app(ledger: str, export_dir: str | None) -> int:
    """One browser tab's app: the review, read-only, telemetry off."""
    from tui.app import GpuoptApp

    app = GpuoptApp(ledger, review=True, readonly=True, telemetry="off", export_dir=export_dir)
    app.run()
    return app.return_code or 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tui.serve", description=__doc__.splitlines()[0])
    ap.add_argument("--app", metavar="LEDGER", help=argparse.SUPPRESS)  # one tab's process
    ap.add_argument("--ledger", metavar="LEDGER", help="the ledger file to serve")
    ap.add_argument("--host", default=DEFAULT_HOST)
    ap.add_argument("--port", type=int, default=DEFAULT_PORT)
    ap.add_argument("--export-dir", metavar="DIR")
    args = ap.parse_args(argv)
    if args.app:
        return run_app(args.app, args.export_dir)
    if not args.ledger:
        ap.error("--ledger LEDGER is needed")
    serve(args.ledger, host=args.host, port=args.port, export_dir=args.export_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
