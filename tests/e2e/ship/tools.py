"""Helpers for the ship e2e tests: find real tools, free ports, HTTP, the controller process."""

from __future__ import annotations

import os
import shutil
import socket
import urllib.error
import urllib.request

import pytest


def require_binary(name: str, hint: str) -> str:
    """The tool's path; outside CI a missing tool skips with a reason, in CI it fails."""
    found = shutil.which(name)
    if found:
        return found
    message = f"{name} not found on PATH ({hint})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    """(status, body); connection errors come back as status 0 so callers can poll."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, ""
