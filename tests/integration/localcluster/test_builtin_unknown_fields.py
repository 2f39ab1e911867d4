"""A built-in kind's unknown fields are dropped on every write, as kube-apiserver's Go decoder
drops them: a Warning each by default, a 400 under fieldValidation=Strict, nothing under
Ignore (the fidelity cases bad-unknown-field-* compare the answers with the real server's)."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

PODS = "/api/v1/namespaces/default/pods"


def _send(
    cluster: Any, method: str, path: str, body: Any, content_type: str = "application/json"
) -> tuple[int, Any, list[str]]:
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=5)
    try:
        conn.request(method, path, json.dumps(body), {"Content-Type": content_type})
        resp = conn.getresponse()
        warnings = resp.headers.get_all("Warning") or []
        return resp.status, json.loads(resp.read()), warnings
    finally:
        conn.close()


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "busybox", **extra}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_a_create_drops_the_field_and_warns(bare_cluster: Any) -> None:
    code, pod, warnings = _send(bare_cluster, "POST", PODS, _pod("warned", imagee="x"))
    assert code == 201, pod
    assert "imagee" not in pod["spec"]["containers"][0]
    assert warnings == ['299 - "unknown field \\"spec.containers[0].imagee\\""']
    code, stored, _ = _send(bare_cluster, "GET", f"{PODS}/warned", None)
    assert "imagee" not in stored["spec"]["containers"][0]
    fields = json.dumps(stored["metadata"]["managedFields"])
    assert "imagee" not in fields


def test_strict_refuses_the_create(bare_cluster: Any) -> None:
    body = _pod("strict", imagee="x")
    body["spec"]["bogus"] = 1
    code, status, _ = _send(bare_cluster, "POST", f"{PODS}?fieldValidation=Strict", body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagee", unknown field "spec.bogus"'
    )
    code, _, _ = _send(bare_cluster, "GET", f"{PODS}/strict", None)
    assert code == 404


def test_ignore_drops_without_a_word(bare_cluster: Any) -> None:
    code, pod, warnings = _send(
        bare_cluster, "POST", f"{PODS}?fieldValidation=Ignore", _pod("ignored", imagee="x")
    )
    assert code == 201 and warnings == []
    assert "imagee" not in pod["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", {"metadata": {"labels": {"a": "b"}, "bogus": 1}}),
        ("application/strategic-merge-patch+json", {"metadata": {"bogus": 1}}),
        ("application/json-patch+json", [{"op": "add", "path": "/metadata/bogus", "value": 1}]),
    ],
    ids=["merge", "strategic", "json"],
)
def test_a_patch_drops_the_field_and_warns(
    bare_cluster: Any, content_type: str, patch: Any
) -> None:
    name = f"patched-{content_type.split('/')[1].split('-')[0]}"
    assert _send(bare_cluster, "POST", PODS, _pod(name))[0] == 201
    code, pod, warnings = _send(bare_cluster, "PATCH", f"{PODS}/{name}", patch, content_type)
    assert code == 200, pod
    assert "bogus" not in pod["metadata"]
    assert warnings == ['299 - "unknown field \\"metadata.bogus\\""']
    code, status, _ = _send(
        bare_cluster, "PATCH", f"{PODS}/{name}?fieldValidation=Strict", patch, content_type
    )
    # the patcher's 422, not the decoder's 400 (kube-apiserver v1.37)
    assert (code, status["reason"]) == (422, "Invalid"), status
    assert status["message"].startswith(' "" is invalid: patch: Invalid value: "')
    assert status["message"].endswith('": strict decoding error: unknown field "metadata.bogus"')
    assert [c["field"] for c in status["details"]["causes"]] == ["patch"]
    code, stored, _ = _send(bare_cluster, "GET", f"{PODS}/{name}", None)
    assert "bogus" not in stored["metadata"]


def test_a_strict_strategic_patch_is_quoted_as_go_prints_it(bare_cluster: Any) -> None:
    assert _send(bare_cluster, "POST", PODS, _pod("smp"))[0] == 201
    patch = {"spec": {"bogus": [1.5, None, True, "s"]}, "metadata": {"labels": {"a": "b"}}}
    code, status, _ = _send(
        bare_cluster,
        "PATCH",
        f"{PODS}/smp?fieldValidation=Strict",
        patch,
        "application/strategic-merge-patch+json",
    )
    assert code == 422, status
    assert status["message"] == (
        ' "" is invalid: patch: Invalid value: "map[metadata:map[labels:map[a:b]] '
        'spec:map[bogus:[1.5 <nil> true s]]]": strict decoding error: '
        'unknown field "spec.bogus"'
    )


def test_a_status_patch_drops_an_unknown_status_field(bare_cluster: Any) -> None:
    assert _send(bare_cluster, "POST", PODS, _pod("status-write"))[0] == 201
    patch = {"status": {"phase": "Running", "phaze": "Running"}}
    code, pod, warnings = _send(
        bare_cluster,
        "PATCH",
        f"{PODS}/status-write/status",
        patch,
        "application/merge-patch+json",
    )
    assert code == 200, pod
    assert pod["status"]["phase"] == "Running" and "phaze" not in pod["status"]
    assert warnings == ['299 - "unknown field \\"status.phaze\\""']


def test_an_update_drops_the_field_and_warns(bare_cluster: Any) -> None:
    code, pod, _ = _send(bare_cluster, "POST", PODS, _pod("replaced"))
    pod["spec"]["bogus"] = True
    code, updated, warnings = _send(bare_cluster, "PUT", f"{PODS}/replaced", pod)
    assert code == 200, updated
    assert "bogus" not in updated["spec"]
    assert warnings == ['299 - "unknown field \\"spec.bogus\\""']
