"""`promtool check metrics` finds no problem in our /metrics exposition."""

from __future__ import annotations

import subprocess

import pytest

from ascendjob_controller import health, metrics
from tests.e2e.ship.tools import http_get, require_binary

pytestmark = [pytest.mark.e2e]


def test_promtool_accepts_our_metrics() -> None:
    promtool = require_binary("promtool", "apt-get install prometheus")
    metrics.init_controller_metrics()
    server = health.serve_metrics("127.0.0.1:0")
    assert server is not None
    try:
        status, body = http_get(server.url + "/metrics")
    finally:
        server.stop()
    assert status == 200
    assert "controller_runtime_reconcile_total" in body
    out = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "" and out.stderr.strip() == "", out.stdout + out.stderr
