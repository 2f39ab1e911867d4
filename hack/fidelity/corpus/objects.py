"""Bodies the corpus sends, as small functions so each case says only what is special."""

from __future__ import annotations

from typing import Any

IMAGE = "busybox:1.36"


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    body_spec = {"containers": [{"name": "main", "image": IMAGE}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body_spec}


def pod_with_resources(name: str, resources: dict[str, Any]) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"][0]["resources"] = resources
    return body


def binding(name: str, node: str = "node-a") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **meta},
        "data": data if data is not None else {"k": "v"},
    }


def service(name: str, **spec: Any) -> dict[str, Any]:
    body_spec = {"ports": [{"port": 80}], "selector": {"app": name}, **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body_spec}


def lease(name: str, holder: str = "a") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
    }


def core_event(name: str, ns: str = "{ns}", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns, "apiVersion": "v1"},
        "reason": "Started",
        "message": "started the thing",
        "type": "Normal",
        "source": {"component": "fidelity"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:05Z",
        "count": 2,
        **extra,
    }


def new_event(name: str, ns: str = "{ns}") -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "fidelity.example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Reconcile",
        "reason": "Synced",
        "note": "synced the thing",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": ns, "apiVersion": "v1"},
    }


def acjob(name: str, replicas: Any = 1, **meta: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "ascend", "image": IMAGE}]}}
    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": name, "labels": {"framework": "pytorch"}, **meta},
        "spec": {
            "replicaSpecs": {
                "Master": {"replicas": replicas, "restartPolicy": "Never", "template": template}
            }
        },
    }


def owner_ref(kind: str, name: str, uid: str, api_version: str = "v1", **extra: Any) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, **extra}


def crd(
    plural: str,
    kind: str,
    schema: dict[str, Any],
    group: str = "fidelity.example.com",
    subresources: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A namespaced CRD with one served version (with a status subresource unless told)."""
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}} if subresources is None else subresources,
    }
    if not version["subresources"]:
        del version["subresources"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
            "versions": [version],
        },
    }
