"""What serving the review beyond this machine means, in the words the person reads."""

from __future__ import annotations

import ipaddress

LOCAL_NAMES = ("localhost",)


def is_local(host: str) -> bool:
    """Only this machine can connect (a loopback address or localhost)."""
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def tunnel_hint(port: int) -> str:
    return f"ssh -L {port}:localhost:{port} GPU-BOX, then http://localhost:{port}"


def beyond_localhost_warning(host: str, port: int) -> str | None:
    """The warning for a review served on `host` (None where only this machine reaches it)."""
    if is_local(host):
        return None
    return (
        f"warning: listening on {host}, beyond this machine: anyone who can reach port "
        f"{port} can read this ledger (repositories, commands, outputs) without a password; "
        f"to read it from elsewhere, keep the default host and tunnel: {tunnel_hint(port)}"
    )
