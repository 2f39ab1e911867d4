"""Shared helpers for the kube/ integration tests (real HTTP against the local cluster)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from ascendjob_controller import metrics
from ascendjob_controller.kube.client import NAMESPACES, KubeClient


def make_client(cluster: Any, **kw: Any) -> KubeClient:
    kw.setdefault("qps", 1000.0)
    kw.setdefault("burst", 1000)
    return KubeClient.from_kubeconfig(str(cluster.kubeconfig_path), **kw)


def fresh_namespace(client: KubeClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.create(NAMESPACES, None, {"metadata": {"name": name}})
    return name


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}, "data": {"k": "v"}}


def wait_for(cond: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while time.monotonic() < deadline:
        if cond():
            return
        pause.wait(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def rest_count(code: str, method: str, host: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "rest_client_requests_total", {"code": code, "method": method, "host": host}
    )
    return value or 0.0
