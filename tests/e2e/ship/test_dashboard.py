"""The Grafana dashboard's PromQL, evaluated by a real Prometheus scraping the real controller.

A leader-elected controller runs a few jobs on the local cluster (one succeeds, one fails, one
restarts, one keeps running, one is deleted) while Prometheus scrapes it every second. Then
every panel query, with the template variables substituted as Grafana would, goes to
Prometheus' HTTP API: each must be accepted, and each must return data, except the few listed
in MAY_BE_EMPTY with the reason. Each template variable's `label_values` query is answered too,
and the alert expressions are accepted, the two about an outage silent. Debian's `prometheus`
package provides the server (CI installs it); without it these tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.ship.promql import (
    JOB,
    PENDING_METRICS,
    alerts,
    dashboard,
    exported_metric_names,
    panel_queries,
    substitute,
)
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

#: What Grafana sends for "All" of a multi-value variable with allValue ".*", and for the
#: built-ins: $__rate_interval is 4 x the ServiceMonitor's 30 s scrape interval.
ALL = {
    "job": JOB,
    "namespace": ".*",
    "framework": ".*",
    "__rate_interval": "2m",
    "__interval": "30s",
    "__range": "10m",
}
#: Panels whose query may rightly find nothing after these jobs, and why.
MAY_BE_EMPTY = {
    "Rank table writes": "no job here mounts a rank table, so nothing is written",
}
RUNNING = "dash-running"
SAMPLES = ("acjob_restart_never.yaml", "acjob_restart_exitcode.yaml")


def query(url: str, promql: str) -> dict[str, Any]:
    status, body = http_get(f"{url}/api/v1/query?query={urllib.parse.quote(promql)}")
    answer: dict[str, Any] = json.loads(body) if body else {"status": f"http {status}"}
    return answer


def query_range(url: str, promql: str, seconds: int = 120) -> dict[str, Any]:
    end = time.time()
    params = urllib.parse.urlencode(
        {"query": promql, "start": end - seconds, "end": end, "step": "15"}
    )
    status, body = http_get(f"{url}/api/v1/query_range?{params}")
    answer: dict[str, Any] = json.loads(body) if body else {"status": f"http {status}"}
    return answer


def values(answer: dict[str, Any]) -> list[float]:
    out: list[float] = []
    for series in answer["data"]["result"]:
        points = series.get("values") or [series["value"]]
        out += [float(v) for _, v in points]
    return out


def finite(answer: dict[str, Any]) -> list[float]:
    return [v for v in values(answer) if math.isfinite(v)]


def scalar(url: str, promql: str) -> float | None:
    answer = query(url, promql)
    assert answer["status"] == "success", answer
    found = finite(answer)
    return found[0] if found else None


def eventually(url: str, promql: str, want: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = scalar(url, promql)
        if last is not None and want(last):
            return
        time.sleep(0.5)
    raise AssertionError(f"{promql}: last value {last}")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dashboard")


@pytest.fixture(scope="module")
def controller(local_cluster: Any, workdir: Path) -> Iterator[ControllerProcess]:
    lease_id = f"dash-{uuid.uuid4().hex[:8]}"
    process = ControllerProcess(
        str(local_cluster.kubeconfig_path),
        workdir,
        "--leader-elect",
        "--leader-election-namespace", "default",
        "--leader-election-id", lease_id,
    )  # fmt: skip
    yield process
    process.stop()


@pytest.fixture(scope="module")
def prometheus(controller: ControllerProcess, workdir: Path) -> Iterator[str]:
    binary = require_binary("prometheus", "apt-get install prometheus")
    port = free_port()
    config = workdir / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        f"scrape_configs:\n  - job_name: {JOB}\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{controller.metrics_port}']\n"
    )
    log_path = workdir / "prometheus.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while http_get(url + "/-/ready")[0] != 200:
            assert proc.poll() is None, log_path.read_text()
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


@pytest.fixture(scope="module")
def after_jobs(
    local_cluster: Any,
    kubectl_bin: str,
    repo_root: Path,
    controller: ControllerProcess,
    prometheus: str,
) -> str:
    """Prometheus' URL once a succeeded, a failed, a restarted and a deleted job are scraped."""
    controller.wait_ready()
    eventually(prometheus, f'sum(leader_election_master_status{{job="{JOB}"}})', lambda v: v == 1)
    kubectl_apply(kubectl_bin, local_cluster, "-f", "-", stdin=small_job(RUNNING, 600))
    kubectl_apply(kubectl_bin, local_cluster, "-f", "-", stdin=small_job("dash-done", 1))
    for sample in SAMPLES:
        kubectl_apply(
            kubectl_bin, local_cluster, "-f", str(repo_root / "manifests/samples" / sample)
        )
    wait_job(local_cluster, RUNNING, ("Running",))
    wait_job(local_cluster, "dash-done", ("Succeeded",))
    wait_job(local_cluster, "sample-restart-never", ("Failed",))
    wait_job(local_cluster, "sample-restart-exitcode", ("Succeeded",))
    delete = subprocess.run(
        [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path), "delete", "acjob",
         "dash-done", "--wait=false"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert delete.returncode == 0, delete.stderr
    sel = f'job="{JOB}"'
    for metric, want in (
        ("ascendjob_jobs_created_total", 4),
        ("ascendjob_jobs_successful_total", 2),
        ("ascendjob_jobs_failed_total", 1),
        ("ascendjob_jobs_restarted_total", 1),
        ("ascendjob_jobs_deleted_total", 1),
    ):
        eventually(prometheus, f"sum({metric}{{{sel}}})", lambda v, w=want: v >= w)
        # rate() needs two samples of a series; a counter's series is born at its first inc.
        eventually(prometheus, f"min(count_over_time({metric}{{{sel}}}[1m]))", lambda v: v >= 3)
    eventually(prometheus, f'sum(ascendjob_jobs{{{sel}, state="Running"}})', lambda v: v == 1)
    return prometheus


def test_every_panel_query_is_accepted_and_returns_data(after_jobs: str) -> None:
    queries = list(panel_queries(dashboard()))
    assert len(queries) >= 30
    pending = PENDING_METRICS - exported_metric_names()
    problems: list[str] = []
    for title, expr in queries:
        promql = substitute(expr, ALL)
        assert "$" not in promql and "[[" not in promql, (title, promql)
        for answer in (query(after_jobs, promql), query_range(after_jobs, promql)):
            if answer.get("status") != "success" or answer.get("warnings"):
                problems.append(f"{title}: {promql}: {answer}")
                continue
            if finite(answer) or title in MAY_BE_EMPTY:
                continue
            if any(m in promql for m in pending):
                continue  # reads a metric the controller does not export yet
            problems.append(f"{title}: no data: {promql}: {answer['data']}")
    assert problems == [], "\n".join(problems)


def test_panels_show_what_happened(after_jobs: str) -> None:
    """A few panels checked for their values, not only for having some."""
    by_title: dict[str, list[str]] = {}
    for title, expr in panel_queries(dashboard()):
        by_title.setdefault(title, []).append(substitute(expr, ALL))
    [up] = by_title["Replicas up"]
    assert scalar(after_jobs, up) == 1
    [leaders] = by_title["Leaders"]
    assert scalar(after_jobs, leaders) == 1
    [known] = by_title["Jobs known"]
    eventually(after_jobs, known, lambda v: v == 3)  # dash-done deleted; 3 left
    [by_state] = by_title["Jobs by state"]
    answer = query(after_jobs, by_state)
    states = {r["metric"]["state"]: float(r["value"][1]) for r in answer["data"]["result"]}
    assert states["Running"] == 1 and states["Failed"] == 1 and states["Succeeded"] == 1, states
    # The namespace variable narrows the job panels: a namespace without jobs shows none.
    created = by_title["Jobs created, succeeded, failed"][0]
    assert scalar(after_jobs, created) is not None
    elsewhere = created.replace('namespace=~".*"', 'namespace=~"no-such-namespace"')
    assert elsewhere != created
    assert query(after_jobs, elsewhere)["data"]["result"] == []


def test_template_variables_find_their_values(after_jobs: str) -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    want = {"job": {JOB}, "namespace": {"default"}, "framework": {"pytorch"}}
    for name, expected in want.items():
        definition = substitute(variables[name]["definition"], ALL)
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", definition)
        assert match, definition
        selector, label = match.groups()
        params = urllib.parse.urlencode({"match[]": selector})
        status, body = http_get(f"{after_jobs}/api/v1/label/{label}/values?{params}")
        assert status == 200, body
        found = set(json.loads(body)["data"])
        assert expected <= found, (name, found)


def test_alert_expressions_run_and_a_healthy_controller_is_not_down(after_jobs: str) -> None:
    for rule in alerts():
        answer = query(after_jobs, rule["expr"])
        assert answer["status"] == "success" and not answer.get("warnings"), (rule, answer)
        if rule["alert"] in ("AscendJobControllerDown", "AscendJobControllerNoLeader"):
            assert answer["data"]["result"] == [], (rule["alert"], answer)
