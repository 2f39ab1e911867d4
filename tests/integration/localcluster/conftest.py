"""A local cluster tuned for these tests: a small watch window and quick bookmarks."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster
from hack.fidelity.corpus.objects import crd

WINDOW = 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    lc = LocalCluster(
        kubeconfig_path=tmp_path_factory.mktemp("lc") / "kubeconfig",
        kubelet=False,
        watch_window=WINDOW,
        bookmark_interval=0.5,
    )
    lc.start()
    yield lc
    lc.stop()


@pytest.fixture
def core(cluster: LocalCluster) -> Any:
    from kubernetes import client

    return client.CoreV1Api(cluster.api_client())


@pytest.fixture
def custom(cluster: LocalCluster) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(cluster.api_client())


@pytest.fixture
def namespace(core: Any) -> Iterator[str]:
    """A fresh namespace per test so tests never see each other's objects."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name


def eventually(check: Callable[[], bool], timeout: float = 20.0, message: str = "") -> None:
    """Poll until `check()` is true; generous timeout because CI machines are noisy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(message or "condition never became true")


def pod_body(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


def acjob_body(name: str, replicas: Any = 1) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "ascend", "image": "pytorch-test:latest"}]}}
    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": name, "labels": {"framework": "pytorch"}},
        "spec": {
            "replicaSpecs": {
                "Master": {"replicas": replicas, "restartPolicy": "Never", "template": template},
            }
        },
    }


def raw_call(
    cluster: LocalCluster,
    method: str,
    path: str,
    data: bytes | None = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> tuple[int, Any]:
    """One HTTP request without the client library, for shapes the client hides."""
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        cluster.url + path,
        data=data,
        method=method,
        headers={"Content-Type": content_type, "Accept": accept},
    )

    def decoded(raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode()  # plain text, as Go's NotFound handler answers

    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, decoded(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, decoded(err.read())


def example_crd(
    kind: str, schema: dict[str, Any], subresources: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A namespaced CRD `<kind>s.example.com` serving v1 with `schema` (the fidelity corpus's
    builder, in the example.com group; no subresources unless given)."""
    return crd(f"{kind.lower()}s", kind, schema, "example.com", subresources or {})
