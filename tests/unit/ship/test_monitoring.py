"""The monitoring manifests: alert rules (plain and PrometheusRule) agree and select our series."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.ship.promql import (
    JOB,
    PENDING_METRICS,
    PROMETHEUS_RULE,
    alerts,
    exported_metric_names,
    rule_groups,
    selectors,
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
