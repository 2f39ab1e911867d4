"""Synthesized pod logs from recorded container state."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster.logs import LogError, pod_log


def pod(state: dict[str, Any] | None, containers: tuple[str, ...] = ("main",)) -> dict[str, Any]:
    statuses = [{"name": "main", "image": "img:1", "state": state}] if state else []
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": c} for c in containers]},
        "status": {"containerStatuses": statuses},
    }


def test_terminated_container_log_names_its_exit_code() -> None:
    state = {
        "terminated": {"exitCode": 137, "reason": "Error", "startedAt": "t0", "finishedAt": "t1"}
    }
    assert pod_log(pod(state), "") == (
        "t0 simulated container main (img:1) started\nt1 exited with code 137 (Error)\n"
    )


def test_running_container_log() -> None:
    assert pod_log(pod({"running": {"startedAt": "t0"}}), "main") == (
        "t0 simulated container main (img:1) started\n"
    )


@pytest.mark.parametrize(
    ("p", "container", "previous", "message"),
    [
        (pod(None), "", False, "is waiting to start: ContainerCreating"),
        (pod(None, ("a", "b")), "", False, "choose one of: [a b]"),
        (pod(None), "other", False, "container other is not valid for pod p"),
        (pod({"running": {}}), "", True, "previous terminated container"),
    ],
)
def test_no_log_reasons(p: dict[str, Any], container: str, previous: bool, message: str) -> None:
    with pytest.raises(LogError, match=message.replace("[", r"\[").replace("]", r"\]")):
        pod_log(p, container, previous)
