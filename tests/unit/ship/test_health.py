"""/healthz, /readyz and /metrics over real HTTP on free loopback ports."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from ascendjob_controller import health, metrics


def get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


@pytest.fixture
def checks() -> health.HealthChecks:
    return health.HealthChecks()


@pytest.fixture
def probes(checks: health.HealthChecks) -> Iterator[health.EndpointServer]:
    server = health.serve_probes("127.0.0.1:0", checks)
    assert server is not None
    yield server
    server.stop()


def test_healthy_process_answers_ok(probes: health.EndpointServer) -> None:
    assert get(probes.url + "/healthz")[::2] == (200, "ok")
    assert get(probes.url + "/readyz")[::2] == (200, "ok")


def test_readyz_fails_until_caches_sync(
    probes: health.EndpointServer, checks: health.HealthChecks
) -> None:
    synced = threading.Event()
    checks.add_ready("informers-synced", synced.is_set)
    status, content_type, body = get(probes.url + "/readyz")
    assert status == 500
    assert content_type.startswith("text/plain")
    assert "[-]informers-synced failed" in body
    assert "[+]ping ok" in body
    assert body.rstrip().endswith("readyz check failed")
    assert get(probes.url + "/healthz")[::2] == (200, "ok")  # liveness does not care
    synced.set()
    assert get(probes.url + "/readyz")[::2] == (200, "ok")


def test_verbose_lists_every_check(
    probes: health.EndpointServer, checks: health.HealthChecks
) -> None:
    checks.add_ready("leader-election", lambda: True)
    status, _, body = get(probes.url + "/readyz?verbose")
    assert status == 200
    assert body.splitlines() == [
        "[+]ping ok",
        "[+]shutdown ok",
        "[+]leader-election ok",
        "readyz check passed",
    ]


def test_shutdown_flips_readiness_first(
    probes: health.EndpointServer, checks: health.HealthChecks
) -> None:
    checks.begin_shutdown()
    status, _, body = get(probes.url + "/readyz")
    assert status == 500
    assert "[-]shutdown failed" in body
    assert get(probes.url + "/healthz")[0] == 200


def test_a_raising_check_fails_instead_of_crashing(
    probes: health.EndpointServer, checks: health.HealthChecks
) -> None:
    def broken() -> bool:
        raise RuntimeError("boom")

    checks.add_health("broken", broken)
    status, _, body = get(probes.url + "/healthz")
    assert (status, "[-]broken failed" in body) == (500, True)


def test_exclude_and_single_check(
    probes: health.EndpointServer, checks: health.HealthChecks
) -> None:
    checks.add_ready("informers-synced", lambda: False)
    assert get(probes.url + "/readyz?exclude=informers-synced")[0] == 200
    assert get(probes.url + "/readyz/ping")[::2] == (200, "ok")
    assert get(probes.url + "/readyz/informers-synced")[0] == 500
    assert get(probes.url + "/readyz/nope")[0] == 404
    assert get(probes.url + "/nothing")[0] == 404


def test_slow_check_does_not_block_other_requests(
    probes: health.EndpointServer, checks: health.HealthChecks
) -> None:
    release = threading.Event()
    entered = threading.Event()

    def slow() -> bool:
        entered.set()
        return release.wait(60)

    checks.add_ready("slow", slow)
    slow_request = threading.Thread(target=get, args=(probes.url + "/readyz",), daemon=True)
    slow_request.start()
    assert entered.wait(30)
    try:
        assert get(probes.url + "/healthz")[::2] == (200, "ok")  # served while /readyz hangs
    finally:
        release.set()
        slow_request.join(30)


def test_evaluate_is_pure() -> None:
    result = health.evaluate("healthz", [("a", lambda: True), ("b", lambda: False)])
    assert result == health.ProbeResult(
        500, "[+]a ok\n[-]b failed: reason withheld\nhealthz check failed\n"
    )


def test_metrics_endpoint_serves_our_names_and_runtime_collectors() -> None:
    metrics.init_controller_metrics()
    server = health.serve_metrics("127.0.0.1:0")
    assert server is not None
    try:
        status, content_type, body = get(server.url + "/metrics")
    finally:
        server.stop()
    assert status == 200
    assert content_type.startswith("text/plain")
    families = list(text_string_to_metric_families(body))
    names = {family.name for family in families}
    for expected in (
        "controller_runtime_reconcile",  # the parser strips _total from counters
        "controller_runtime_reconcile_errors",
        "controller_runtime_reconcile_time_seconds",
        "workqueue_depth",
        "rest_client_requests",
        "leader_election_master_status",
        "ascendjob_jobs",
        "ascendjob_jobs_created",
        "process_cpu_seconds",
        "python_info",
        "python_gc_objects_collected",
    ):
        assert expected in names, expected
    # Every result label is exported from the first scrape (its value depends on what other
    # tests in this process reconciled, since the registry is process-wide).
    results = {
        sample.labels["result"]
        for family in families
        if family.name == "controller_runtime_reconcile"
        for sample in family.samples
        if sample.name == "controller_runtime_reconcile_total"
        and sample.labels.get("controller") == "ascendjob"
    }
    assert results >= {"success", "error", "requeue", "requeue_after"}


def test_metrics_endpoint_speaks_openmetrics_when_asked() -> None:
    registry = CollectorRegistry()
    Counter("demo_things", "things", registry=registry).inc()
    server = health.serve_metrics("127.0.0.1:0", registry)
    assert server is not None
    try:
        status, content_type, body = get(
            server.url + "/metrics", accept="application/openmetrics-text; version=1.0.0"
        )
    finally:
        server.stop()
    assert status == 200
    assert content_type.startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF")
    assert "demo_things_total 1.0" in body


def test_runtime_collectors_register_once() -> None:
    registry = CollectorRegistry()
    health.register_runtime_collectors(registry)
    health.register_runtime_collectors(registry)
    families = [m.name for m in registry.collect()]
    assert families.count("process_cpu_seconds") == 1


def test_disabled_addresses_start_nothing(checks: health.HealthChecks) -> None:
    assert health.serve_metrics("0") is None
    assert health.start_servers("0", "0", checks) == []


def test_start_servers_starts_both_and_stops_them(checks: health.HealthChecks) -> None:
    servers = health.start_servers("127.0.0.1:0", "127.0.0.1:0", checks)
    assert [s.name for s in servers] == ["metrics", "probes"]
    assert get(servers[0].url + "/metrics")[0] == 200
    assert get(servers[1].url + "/healthz")[0] == 200
    for server in servers:
        server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(servers[1].url + "/healthz", timeout=5)


def test_a_port_in_use_leaves_nothing_running(checks: health.HealthChecks) -> None:
    taken = health.serve_probes("127.0.0.1:0", checks)
    assert taken is not None
    try:
        with pytest.raises(OSError):
            health.start_servers("127.0.0.1:0", f"127.0.0.1:{taken.port}", checks)
    finally:
        taken.stop()
