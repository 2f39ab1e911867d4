"""Helpers for the monitoring tests: the shipped rules and dashboard, and the PromQL in them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
RULES = REPO_ROOT / "manifests/monitoring/prometheus-rules.yml"
RULES_TESTS = REPO_ROOT / "tests/e2e/ship/rules_test.yml"
PROMETHEUS_RULE = REPO_ROOT / "manifests/components/servicemonitor/prometheusrule.yaml"
DASHBOARD = REPO_ROOT / "manifests/monitoring/grafana-dashboard.json"

#: The job label every shipped query selects the controller's series by.
JOB = "ascendjob-controller"

#: Metrics a rule or panel may use before the controller exports them; none today (the state
#: start-time gauge of the "stuck" alerts, once listed here, is exported by metrics.py).
PENDING_METRICS: frozenset[str] = frozenset()

# A metric name right before a label matcher: `name{...}`. Every selector in our files has one.
_SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")


def rule_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text())["groups"]
    return groups


def alerts() -> list[dict[str, Any]]:
    return [rule for group in rule_groups() for rule in group["rules"] if "alert" in rule]


def selectors(promql: str) -> list[tuple[str, str]]:
    """(metric, matchers) of each `metric{matchers}` in the expression."""
    return [(m.group(1), m.group(2)) for m in _SELECTOR.finditer(promql)]


def dashboard() -> dict[str, Any]:
    board: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return board


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows included."""
    for panel in board.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def panel_queries(board: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, expr) of every Prometheus target."""
    for panel in panels(board):
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield str(panel["title"]), str(target["expr"])


def substitute(expr: str, values: dict[str, str]) -> str:
    """The query as Grafana sends it: `$var`, `${var}` and `[[var]]` replaced by their values.

    Longest names first, so `$__rate_interval` is not read as `$__rate` + `_interval`.
    """
    out = expr
    for name in sorted(values, key=len, reverse=True):
        value = values[name]
        out = out.replace("${" + name + "}", value).replace("[[" + name + "]]", value)
        pattern = re.compile(r"\$" + re.escape(name) + r"(?![A-Za-z0-9_])")
        out = pattern.sub(lambda _m, v=value: v, out)  # type: ignore[misc]
    return out


def exported_metric_names() -> set[str]:
    """The sample names the controller's registry can expose (counter `_total`, histogram parts)."""
    from ascendjob_controller import health, metrics

    names: set[str] = set()
    health.register_runtime_collectors()
    for family in metrics.REGISTRY.collect():
        if family.type == "counter":
            names |= {family.name + "_total", family.name + "_created"}
        elif family.type == "histogram":
            names |= {family.name + s for s in ("_bucket", "_sum", "_count", "_created")}
        else:
            names.add(family.name)
        names |= {sample.name for sample in family.samples}
    return names
