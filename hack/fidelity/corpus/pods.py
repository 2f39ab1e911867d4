"""Pods: create defaults and admission, QoS, binding, status, graceful deletion."""

from __future__ import annotations

from typing import Any

from hack.fidelity.corpus.objects import binding, pod, pod_with_resources
from hack.fidelity.steps import (
    Until,
    case,
    delete,
    get,
    patch,
    post,
    prep,
    put,
    wait_for,
)

LIMITS_ONLY = {"limits": {"cpu": "500m", "memory": "256Mi", "huawei.com/Ascend910": "1"}}


def _ports(name: str, *ports: dict[str, Any]) -> dict[str, Any]:
    """A pod whose one container has these ports."""
    body = pod(name)
    body["spec"]["containers"][0]["ports"] = list(ports)
    return body


def _image(name: str, image: str | None, **container: Any) -> dict[str, Any]:
    """A pod whose one container has this image (None: no image at all)."""
    body = pod(name)
    body["spec"]["containers"][0].update(container)
    if image is None:
        del body["spec"]["containers"][0]["image"]
    else:
        body["spec"]["containers"][0]["image"] = image
    return body


CASES = [
    case(
        "pod-create-defaults-and-admission",
        post("pods", pod_with_resources("p", LIMITS_ONLY)),
        get("pods/p"),
    ),
    case(
        "pod-qos-guaranteed-from-limits",
        post("pods", pod_with_resources("g", LIMITS_ONLY)),
        get("pods/g", pick=("status.qosClass", "spec.containers[0].resources")),
    ),
    case(
        "pod-qos-burstable",
        post(
            "pods",
            pod_with_resources("b", {"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}}),
            pick=("status.qosClass", "spec.containers[0].resources"),
        ),
    ),
    case(
        "pod-qos-burstable-requests-only",
        post(
            "pods",
            pod_with_resources("r", {"requests": {"memory": "64Mi"}}),
            pick=("status.qosClass", "spec.containers[0].resources"),
        ),
    ),
    case(
        "pod-qos-besteffort",
        post("pods", pod("e"), pick=("status", "spec.containers[0].resources")),
    ),
    case(
        "pod-qos-init-container-limits",
        post(
            "pods",
            pod(
                "i",
                initContainers=[
                    {"name": "init", "image": "busybox:1.36", "resources": LIMITS_ONLY}
                ],
            ),
            pick=("status.qosClass", "spec.initContainers[0].resources"),
        ),
    ),
    case(
        "pod-duplicate-create-409",
        prep(post("pods", pod("dup"))),
        post("pods", pod("dup")),
    ),
    case(
        "pod-generate-name",
        post(
            "pods",
            {**pod(""), "metadata": {"generateName": "worker-"}},
            save={"n": "metadata.name"},
        ),
        get("pods/{n}", pick=("metadata.name", "metadata.generateName")),
    ),
    case(
        "pod-update-labels-put-and-merge-patch",
        prep(post("pods", pod("p"))),
        get("pods/p", save={"rv": "metadata.resourceVersion"}, compare=False),
        put(
            "pods/p",
            {
                **pod("p", labels={"a": "1"}),
                "metadata": {"name": "p", "labels": {"a": "1"}, "resourceVersion": "{rv}"},
            },
        ),
        patch("pods/p", {"metadata": {"labels": {"b": "2"}}}),
    ),
    case(
        "pod-spec-immutable-422",
        prep(post("pods", pod("p"))),
        patch("pods/p", {"spec": {"restartPolicy": "Never"}}),
    ),
    case(
        "pod-image-update-allowed",
        prep(post("pods", pod("p"))),
        patch(
            "pods/p",
            {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}},
            "strategic",
            pick=("spec.containers", "metadata.generation"),
        ),
    ),
    case(
        "pod-delete-unbound-is-immediate",
        prep(post("pods", pod("p"))),
        delete("pods/p"),
        get("pods/p"),
        post("pods", pod("p"), pick=("metadata.name",)),
    ),
    case(
        "pod-delete-bound-is-graceful",
        prep(post("pods", pod("p"))),
        post("pods/p/binding", binding("p")),
        delete("pods/p"),
        get(
            "pods/p",
            pick=(
                "metadata.deletionTimestamp",
                "metadata.deletionGracePeriodSeconds",
                "metadata.generation",
            ),
        ),
        post("pods", pod("p")),
        delete("pods/p", {"gracePeriodSeconds": 0}),
        get("pods/p"),
    ),
    case(
        "pod-graceful-delete-shorter-grace",
        prep(post("pods", pod("p"))),
        prep(post("pods/p/binding", binding("p"))),
        delete("pods/p", {"gracePeriodSeconds": 20}, pick=("metadata.deletionGracePeriodSeconds",)),
        delete("pods/p", {"gracePeriodSeconds": 60}, pick=("metadata.deletionGracePeriodSeconds",)),
        delete("pods/p", {"gracePeriodSeconds": 5}, pick=("metadata.deletionGracePeriodSeconds",)),
        delete("pods/p", {"gracePeriodSeconds": 0}, pick=("kind", "metadata.name")),
        get("pods/p", pick=("code", "reason")),
    ),
    case(
        "pod-delete-terminal-phase-is-immediate",
        prep(post("pods", pod("p"))),
        prep(post("pods/p/binding", binding("p"))),
        patch("pods/p/status", {"status": {"phase": "Succeeded"}}, pick=("status.phase",)),
        delete("pods/p", pick=("kind", "metadata.deletionTimestamp")),
        get("pods/p", pick=("code",)),
    ),
    case(
        "pod-binding-sets-node-and-condition",
        prep(post("pods", pod("p"))),
        post("pods/p/binding", binding("p")),
        get("pods/p", pick=("spec.nodeName", "status")),
    ),
    case(
        "pod-binding-twice-409",
        prep(post("pods", pod("p"))),
        prep(post("pods/p/binding", binding("p"))),
        post("pods/p/binding", binding("p", "node-b")),
    ),
    case(
        "pod-binding-missing-pod-404",
        post("pods/nope/binding", binding("nope")),
    ),
    case(
        "pod-status-subresource",
        prep(post("pods", pod("p"))),
        patch(
            "pods/p/status",
            {"status": {"phase": "Running", "podIP": "10.244.0.7"}},
            pick=("status", "metadata.generation"),
        ),
        patch("pods/p", {"status": {"phase": "Failed"}}, pick=("status.phase",)),
        get("pods/p/status", pick=("kind", "status.phase", "status.podIP")),
    ),
    case(
        "pod-serviceaccount-missing-403",
        post("pods", pod("p", serviceAccountName="missing")),
    ),
    case(
        "pod-automount-disabled",
        post("pods", pod("p", automountServiceAccountToken=False), pick=("spec",)),
    ),
    case(
        "pod-own-tolerations-kept",
        post(
            "pods",
            pod(
                "p",
                tolerations=[
                    {
                        "key": "node.kubernetes.io/not-ready",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 60,
                    },
                    {"key": "huawei.com/Ascend910", "operator": "Exists", "effect": "NoSchedule"},
                ],
            ),
            pick=("spec.tolerations",),
        ),
    ),
    case(
        "pod-metadata-generation-on-spec-update",
        prep(post("pods", pod("p"))),
        patch(
            "pods/p",
            {"spec": {"activeDeadlineSeconds": 600}},
            pick=("metadata.generation", "spec.activeDeadlineSeconds"),
        ),
        patch("pods/p", {"metadata": {"labels": {"x": "y"}}}, pick=("metadata.generation",)),
    ),
    case(
        "pod-terminating-then-gone-after-grace-zero",
        prep(post("pods", pod("p"))),
        prep(post("pods/p/binding", binding("p"))),
        prep(delete("pods/p")),
        patch(
            "pods/p", {"metadata": {"labels": {"during": "deletion"}}}, pick=("metadata.labels",)
        ),
        delete("pods/p", {"gracePeriodSeconds": 0, "preconditions": {"uid": "wrong"}}),
        wait_for("pods/p", Until(has="metadata.deletionTimestamp"), pick=("metadata.name",)),
    ),
    # Found by `make fuzz --seed 47`: a container's ports, a pod's restart policy and node
    # selector are validated (validation._container_ports, label_causes), and a volume
    # source's scalars are decoded as Go types (typed_fields._volume_source_error).
    case(
        "bad-pod-ports-selector-and-volumes",
        post("pods", _ports("p1", {"name": "\u200b", "containerPort": 80})),
        post(
            "pods",
            _ports(
                "p2",
                {"name": "Http", "containerPort": 80},
                {"name": "a-very-long-port-name", "containerPort": 81},
                {"name": "1234", "containerPort": 82},
                {"name": "a--b", "containerPort": 83},
                {"name": "-ab", "containerPort": 84},
            ),
        ),
        post(
            "pods",
            _ports(
                "p3", {"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}
            ),
        ),
        post(
            "pods",
            _ports(
                "p4",
                {"containerPort": 0},
                {"containerPort": 70000, "hostPort": 70000, "protocol": "ICMP"},
            ),
        ),
        post(
            "pods",
            pod(
                "p5",
                nodeSelector={
                    "accelerator-type": "'; DROP TABLE jobs;--",
                    "bad key!": "v",
                    "ok": "x" * 70,
                },
            ),
        ),
        post("pods", pod("p6", nodeSelector={"a": "b c"}, restartPolicy="Sometimes")),
        post(
            "pods",
            pod("p7", volumes=[{"name": "v", "hostPath": {"path": -1}}], nodeSelector={"a": 5}),
        ),
        post("pods", pod("p8", volumes=[{"name": "v", "hostPath": {"path": "/x", "type": 5}}])),
        post(
            "pods",
            pod(
                "p9",
                volumes=[{"name": "v", "nfs": {"server": "s", "path": "/x", "readOnly": "yes"}}],
            ),
        ),
        post("pods", pod("p10", volumes=[{"name": "v", "emptyDir": {"medium": 5}}])),
        post("pods", pod("p11", volumes=[{"name": "v", "secret": {"secretName": 5}}])),
        post(
            "pods", pod("p12", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": 5}}])
        ),
        post(
            "pods",
            pod("p13", volumes=[{"name": "v", "configMap": {"name": "c", "defaultMode": "x"}}]),
        ),
    ),
    # Found by `make fuzz --seed 53`: a container's image is required and may not start or
    # end with whitespace, checked after the checks common to every container.
    case(
        "bad-pod-image-422",
        post("pods", _image("i1", " ", ports=[{"name": "Bad", "containerPort": 80}])),
        post("pods", _image("i2", " busybox")),
        post("pods", _image("i3", None)),
    ),
]
