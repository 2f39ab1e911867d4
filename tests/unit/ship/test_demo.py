"""The demo's pure parts: state, transition lines, the kubectl hint, sample and port choice."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from ascendjob_controller import demo


def test_job_state_is_the_last_condition() -> None:
    job = {"status": {"conditions": [{"type": "Created"}, {"type": "Running"}]}}
    assert demo.job_state(job) == "Running"
    assert demo.job_state({}) is None
    assert demo.job_state({"status": {"conditions": []}}) is None


def test_transition_lines() -> None:
    when = datetime(2026, 1, 2, 12, 0, 1)
    key = "default/default-test-pytorch"
    assert demo.transition_line(when, key, "Created", "Running") == (
        "12:00:01  default/default-test-pytorch  Created -> Running"
    )
    assert demo.transition_line(when, key, None, "Created") == (
        "12:00:01  default/default-test-pytorch  Created"
    )
    assert demo.transition_line(when, key, "Running", "Restarting", 2).endswith(
        "Running -> Restarting  (restarts: 2)"
    )
    assert demo.transition_line(when, key, "Running", "Running", 3).endswith(
        "pytorch  Running  (restarts: 3)"
    )


def test_new_states_recover_what_a_poll_missed() -> None:
    job = {
        "status": {
            "conditions": [
                {"type": "Created", "status": "True", "lastTransitionTime": "2026-01-02T12:00:00Z"},
                {"type": "Restarting", "status": "False", "lastTransitionTime": "x"},
                {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-02T12:00:01Z"},
            ]
        }
    }
    seen: set[tuple[str, str]] = set()
    assert demo.new_states(job, seen) == [
        ("Created", "2026-01-02T12:00:00Z"),
        ("Running", "2026-01-02T12:00:01Z"),
    ]
    seen.update(demo.new_states(job, seen))
    assert demo.new_states(job, seen) == []
    # Running again after a restart is a new transition: its lastTransitionTime moved.
    job["status"]["conditions"][2]["lastTransitionTime"] = "2026-01-02T12:00:09Z"
    assert demo.new_states(job, seen) == [("Running", "2026-01-02T12:00:09Z")]


def test_local_time() -> None:
    fallback = datetime(2000, 1, 1)
    converted = demo.local_time("2026-01-02T12:00:01Z", fallback)
    assert converted.utcoffset() is not None
    assert converted.timestamp() == datetime.fromisoformat("2026-01-02T12:00:01+00:00").timestamp()
    assert demo.local_time("garbage", fallback) is fallback


def test_restarts() -> None:
    assert demo.restarts({"status": {"restartCount": 3}}) == 3
    assert demo.restarts({}) == 0


def test_kubectl_hint_names_the_kubeconfig_and_job() -> None:
    hint = demo.kubectl_hint(Path("/tmp/kc"), "default", "j1", "http://127.0.0.1:8080")
    assert "export KUBECONFIG=/tmp/kc" in hint
    assert "kubectl get acjob" in hint
    assert "kubectl describe acjob j1 -n default" in hint
    assert "curl -s http://127.0.0.1:8080/metrics" in hint
    assert "Ctrl-C" in hint
    assert "curl" not in demo.kubectl_hint(Path("/tmp/kc"), "default", "j1", None)


def test_find_sample_prefers_the_explicit_one(tmp_path: Path, repo_root: Path) -> None:
    assert demo.find_sample("x.yaml", tmp_path) == Path("x.yaml")
    found = demo.find_sample(None, repo_root / "ascendjob_controller")
    assert found == repo_root / "manifests/samples/pytorch_multinodes_acjob_910b.yaml"


def test_find_sample_fails_clearly_outside_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="--sample"):
        demo.find_sample(None, tmp_path / "site-packages" / "ascendjob_controller")


def test_busy_ports_are_disabled_not_fatal() -> None:
    assert demo.usable_address(":8080", lambda host, port: True) == ":8080"
    assert demo.usable_address(":8080", lambda host, port: False) == "0"
    assert demo.usable_address("0", lambda host, port: False) == "0"
    assert demo.usable_address("127.0.0.1:0", lambda host, port: False) == "127.0.0.1:0"
