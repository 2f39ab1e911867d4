"""The monitoring manifests: alert rules (plain and PrometheusRule) and the Grafana dashboard."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.ship.promql import (
    DASHBOARD,
    JOB,
    PENDING_METRICS,
    PROMETHEUS_RULE,
    alerts,
    dashboard,
    exported_metric_names,
    panel_queries,
    panels,
    rule_groups,
    selectors,
    substitute,
)


def render_overlay(kubectl: str, repo_root: Path, tmp_path: Path, *components: str) -> list[Any]:
    base = os.path.relpath(repo_root / "manifests", tmp_path)
    parts = [os.path.relpath(repo_root / "manifests" / c, tmp_path) for c in components]
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{', '.join(parts)}]\n"
    )
    out = subprocess.run(
        [kubectl, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def test_prometheusrule_carries_exactly_the_plain_rules() -> None:
    wrapper = yaml.safe_load(PROMETHEUS_RULE.read_text())
    assert (wrapper["apiVersion"], wrapper["kind"]) == (
        "monitoring.coreos.com/v1",
        "PrometheusRule",
    )
    assert wrapper["spec"]["groups"] == rule_groups()


def test_servicemonitor_component_adds_the_rules(
    kubectl_bin: str, repo_root: Path, tmp_path: Path
) -> None:
    docs = render_overlay(kubectl_bin, repo_root, tmp_path, "components/servicemonitor")
    [rule] = [d for d in docs if d["kind"] == "PrometheusRule"]
    assert rule["metadata"]["namespace"] == "ascendjob-system"
    assert rule["spec"]["groups"] == rule_groups()
    [monitor] = [d for d in docs if d["kind"] == "ServiceMonitor"]
    [service] = [d for d in docs if d["kind"] == "Service"]
    # The job label the rules select on is the one the ServiceMonitor gives the series.
    assert service["metadata"]["labels"][monitor["spec"]["jobLabel"]] == JOB
    # The job's own namespace label on ascendjob_* is kept, not renamed exported_namespace.
    assert monitor["spec"]["endpoints"][0]["honorLabels"] is True


def test_every_alert_is_complete() -> None:
    for rule in alerts():
        assert rule["alert"].startswith("AscendJob"), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert set(rule["annotations"]) == {"summary", "description"}, rule["alert"]


def test_every_selector_is_scoped_to_our_job() -> None:
    """Our metric names are shared with every Go controller: the job matcher keeps theirs out."""
    for rule in alerts():
        found = selectors(rule["expr"])
        assert found, rule["alert"]
        for metric, matchers in found:
            assert f'job="{JOB}"' in matchers, (rule["alert"], metric)


def test_rules_use_only_metrics_we_export() -> None:
    exported = exported_metric_names() | {"up"}  # up: Prometheus' own, per target
    used = {metric for rule in alerts() for metric, _ in selectors(rule["expr"])}
    assert used - exported <= PENDING_METRICS, used - exported - PENDING_METRICS
    assert "controller_runtime_reconcile_errors_total" in exported  # the helper sees counters


# --- the Grafana dashboard ----------------------------------------------------------------------

#: The panels the dashboard must have (issue 11), by the metric each one reads.
REQUIRED_METRICS = {
    "up",
    "leader_election_master_status",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_start_time_seconds",  # restarts
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds_bucket",
    "workqueue_depth",
    "workqueue_queue_duration_seconds_bucket",
    "workqueue_retries_total",
    "workqueue_unfinished_work_seconds",
    "rest_client_requests_total",
    "rest_client_request_duration_seconds_bucket",
    "ascendjob_jobs",
    "ascendjob_jobs_created_total",
    "ascendjob_jobs_successful_total",
    "ascendjob_jobs_failed_total",
    "ascendjob_jobs_restarted_total",
    "ascendjob_pods_created_total",
    "ascendjob_pods_deleted_total",
}
#: Metrics whose series carry the job's namespace and framework: the variables filter them.
PER_JOB_METRICS = {
    "ascendjob_jobs_created_total",
    "ascendjob_jobs_successful_total",
    "ascendjob_jobs_failed_total",
    "ascendjob_jobs_restarted_total",
    "ascendjob_jobs_deleted_total",
    "ascendjob_pods_created_total",
    "ascendjob_pods_deleted_total",
}


def test_dashboard_is_valid_json_with_its_variables() -> None:
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] == "ascendjob-controller" and board["title"]
    assert board["id"] is None  # provisioned dashboards get their id from Grafana
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert list(variables) == ["datasource", "job", "namespace", "framework"]
    assert (variables["datasource"]["type"], variables["datasource"]["query"]) == (
        "datasource",
        "prometheus",
    )
    for name in ("job", "namespace", "framework"):
        var = variables[name]
        assert var["type"] == "query"
        assert var["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert var["definition"].startswith("label_values(") and var["definition"].endswith(
            f", {name})"
        )
        assert var["query"]["query"] == var["definition"]
    for name in ("namespace", "framework"):
        assert variables[name]["multi"] and variables[name]["includeAll"]
        assert variables[name]["allValue"] == ".*"


def test_dashboard_panels_are_laid_out_and_use_the_datasource_variable() -> None:
    board = dashboard()
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in panels(board):
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["w"] > 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"])
                for y in range(pos["y"], pos["y"] + pos["h"])}  # fmt: skip
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine
        if panel["type"] == "row":
            continue
        assert panel["description"], panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"], panel["title"]


def test_dashboard_queries_select_our_job_and_honour_the_variables() -> None:
    used: set[str] = set()
    for title, expr in panel_queries(dashboard()):
        found = selectors(expr)
        assert found, title
        for metric, matchers in found:
            used.add(metric)
            assert 'job=~"$job"' in matchers, (title, metric)
            if metric in PER_JOB_METRICS:
                assert 'namespace=~"$namespace"' in matchers, (title, metric)
                assert 'framework=~"$framework"' in matchers, (title, metric)
        if "rate(" in expr:
            assert "[$__rate_interval]" in expr, title
    assert used >= REQUIRED_METRICS, REQUIRED_METRICS - used
    exported = exported_metric_names() | {"up"}
    assert used - exported <= PENDING_METRICS, used - exported - PENDING_METRICS


def test_substitution_replaces_every_variable_form() -> None:
    values = {"namespace": "a|b", "__rate_interval": "2m", "__range": "1h"}
    expr = (
        'rate(x{n=~"$namespace", m=~"${namespace}", o=~"[[namespace]]"}[$__rate_interval]) $__range'
    )
    assert substitute(expr, values) == 'rate(x{n=~"a|b", m=~"a|b", o=~"a|b"}[2m]) 1h'


def test_dashboard_component_renders_the_configmap(
    kubectl_bin: str, repo_root: Path, tmp_path: Path
) -> None:
    docs = render_overlay(kubectl_bin, repo_root, tmp_path, "components/grafana-dashboard")
    [configmap] = [d for d in docs if d["kind"] == "ConfigMap"]
    meta = configmap["metadata"]
    assert meta["labels"]["grafana_dashboard"] == "1"
    assert meta["namespace"] == "ascendjob-system"
    assert meta["name"] == "ascendjob-controller-grafana-dashboard"  # stable: no hash suffix
    assert list(configmap["data"]) == ["ascendjob-controller.json"]
    assert json.loads(configmap["data"]["ascendjob-controller.json"]) == dashboard()
    # The base is unchanged by the component.
    assert len([d for d in docs if d["kind"] == "Deployment"]) == 1
