"""A real Prometheus server scrapes the controller; we assert through its HTTP API.

Debian's `prometheus` package provides the binary (CI installs it); without it the test is
skipped locally with the reason, and fails in CI (CI=true), where a skip would pass silently.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.ship.tools import (
    ControllerProcess,
    free_port,
    http_get,
    kubectl_apply,
    require_binary,
    small_job,
    wait_job,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

JOBS = ("prom-a", "prom-b")


@pytest.fixture
def controller(local_cluster: Any, tmp_path: Path) -> Iterator[ControllerProcess]:
    process = ControllerProcess(str(local_cluster.kubeconfig_path), tmp_path)
    yield process
    process.stop()


@pytest.fixture
def prometheus(controller: ControllerProcess, tmp_path: Path) -> Iterator[str]:
    binary = require_binary("prometheus", "apt-get install prometheus")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: ascendjob-controller\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{controller.metrics_port}']\n"
    )
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while http_get(url + "/-/ready")[0] != 200:
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
            assert time.monotonic() < deadline, "prometheus never became ready"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()


def query(url: str, promql: str) -> list[dict[str, Any]]:
    status, body = http_get(f"{url}/api/v1/query?query={urllib.parse.quote(promql)}")
    assert status == 200, body
    answer = json.loads(body)
    assert answer["status"] == "success", answer
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def eventually_value(url: str, promql: str, want: Any, timeout: float = 60.0) -> float:
    """Poll the query until `want(value)` holds (scrapes lag by an interval or two)."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        result = query(url, promql)
        if result:
            value = float(result[0]["value"][1])
            if want(value):
                return value
        time.sleep(0.5)
    raise AssertionError(f"{promql}: last value {value}")


def test_prometheus_scrapes_reconciles_and_job_states(
    local_cluster: Any,
    kubectl_bin: str,
    controller: ControllerProcess,
    prometheus: str,
) -> None:
    controller.wait_ready()
    eventually_value(prometheus, 'up{job="ascendjob-controller"}', lambda v: v == 1)
    for name in JOBS:
        kubectl_apply(kubectl_bin, local_cluster, "-f", "-", stdin=small_job(name, 1))
    for name in JOBS:
        wait_job(local_cluster, name, ("Succeeded",))

    eventually_value(
        prometheus,
        'sum(controller_runtime_reconcile_total{controller="ascendjob"})',
        lambda v: v > 0,
    )
    eventually_value(prometheus, 'ascendjob_jobs{state="Succeeded"}', lambda v: v == len(JOBS))
    eventually_value(
        prometheus,
        "sum(ascendjob_jobs_successful_total)",
        lambda v: v == len(JOBS),
    )
    # The runtime collectors are on the same registry, so one scrape has them too.
    memory = 'process_resident_memory_bytes{job="ascendjob-controller"}'
    eventually_value(prometheus, memory, lambda v: v > 0)
