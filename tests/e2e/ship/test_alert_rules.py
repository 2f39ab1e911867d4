"""The shipped alert rules, checked and unit-tested by the real promtool.

`promtool check rules` validates manifests/monitoring/prometheus-rules.yml; `promtool test rules`
runs tests/e2e/ship/rules_test.yml, where every alert is shown firing on synthetic series and
staying silent on healthy ones. Debian's `prometheus` package brings promtool (CI installs it);
without it these tests skip locally and fail in CI.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.ship.promql import RULES, RULES_TESTS, alerts
from tests.e2e.ship.tools import require_binary

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def promtool() -> str:
    return require_binary("promtool", "apt-get install prometheus")


def run(promtool: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_promtool_check_rules(promtool: str) -> None:
    out = run(promtool, "check", "rules", str(RULES))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in out.stdout, out.stdout


def test_promtool_unit_tests_pass(promtool: str) -> None:
    out = run(promtool, "test", "rules", str(RULES_TESTS))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout, out.stdout


def test_every_alert_is_shown_firing_and_silent() -> None:
    cases = yaml.safe_load(RULES_TESTS.read_text())
    assert cases["rule_files"] == ["../../../manifests/monitoring/prometheus-rules.yml"]
    fired: set[str] = set()
    silent: set[str] = set()
    for test in cases["tests"]:
        for check in test["alert_rule_test"]:
            (fired if check.get("exp_alerts") else silent).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert len(names) == len(alerts()), "alert names are unique"
    assert fired == names, f"never shown firing: {names - fired}; unknown: {fired - names}"
    assert silent == names, f"never shown silent: {names - silent}; unknown: {silent - names}"


@pytest.mark.parametrize(
    ("alert", "before", "after"),
    [
        # Each mutation makes a rule wrong in a way one of the unit tests must notice.
        ("AscendJobStuckRestarting", "> 1800", "> 3600"),
        ("AscendJobReconcileErrorsHigh", "> 0.1", "> 0.5"),
        ("AscendJobAPIErrorsHigh", 'code=~"5..|429"', 'code=~"5.."'),
        ("AscendJobControllerDown", "for: 5m", "for: 15m"),
    ],
)
def test_the_unit_tests_catch_a_broken_rule(
    promtool: str, tmp_path: Path, alert: str, before: str, after: str
) -> None:
    """The promtool tests can fail: a copy of the rules with one rule changed fails them."""
    text = RULES.read_text()
    start = text.index(f"- alert: {alert}\n")
    end = text.find("- alert:", start + 1)
    end = len(text) if end < 0 else end
    rule = text[start:end]
    assert before in rule, (alert, before)
    broken = text[:start] + rule.replace(before, after, 1) + text[end:]
    (tmp_path / "manifests/monitoring").mkdir(parents=True)
    (tmp_path / "manifests/monitoring/prometheus-rules.yml").write_text(broken)
    tests_dir = tmp_path / "tests/e2e/ship"
    tests_dir.mkdir(parents=True)
    shutil.copy(RULES_TESTS, tests_dir / RULES_TESTS.name)
    assert (
        run(
            promtool, "check", "rules", str(tmp_path / "manifests/monitoring/prometheus-rules.yml")
        ).returncode
        == 0
    )
    out = run(promtool, "test", "rules", str(tests_dir / RULES_TESTS.name))
    assert out.returncode != 0, out.stdout
    assert f"alertname: {alert}," in out.stdout + out.stderr, out.stdout + out.stderr
