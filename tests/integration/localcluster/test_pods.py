"""Pods as kube-apiserver v1.37 shapes them: admission defaults, QoS, graceful deletion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import pod_body, raw_call

pytestmark = pytest.mark.integration

LIMITS_ONLY = {"limits": {"cpu": "500m", "memory": "256Mi", "huawei.com/Ascend910": "1"}}


def _bind(cluster: LocalCluster, namespace: str, name: str, node: str = "node-a") -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    code, _ = raw_call(
        cluster,
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
        json.dumps(body).encode(),
    )
    assert code == 201


def test_every_new_namespace_has_a_default_service_account(core: Any, namespace: str) -> None:
    names = [sa.metadata.name for sa in core.list_namespaced_service_account(namespace).items]
    assert names == ["default"]


def test_requests_default_from_limits_and_qos_follows(core: Any, namespace: str) -> None:
    body = pod_body("npu")
    body["spec"]["containers"][0]["resources"] = LIMITS_ONLY
    pod = core.create_namespaced_pod(namespace, body)
    assert pod.spec.containers[0].resources.requests == LIMITS_ONLY["limits"]
    assert pod.status.qos_class == "Guaranteed"
    assert core.create_namespaced_pod(namespace, pod_body("plain")).status.qos_class == (
        "BestEffort"
    )


def test_service_account_admission_defaults(core: Any, namespace: str) -> None:
    pod = core.create_namespaced_pod(namespace, pod_body("p"))
    spec = pod.spec
    assert (spec.service_account_name, spec.service_account) == ("default", "default")
    (volume,) = spec.volumes
    assert volume.name.startswith("kube-api-access-") and len(volume.name) == 21
    assert volume.projected.sources[0].service_account_token.expiration_seconds == 3607
    (mount,) = spec.containers[0].volume_mounts
    assert (mount.name, mount.mount_path, mount.read_only) == (
        volume.name,
        "/var/run/secrets/kubernetes.io/serviceaccount",
        True,
    )
    assert [(t.key, t.effect, t.toleration_seconds) for t in spec.tolerations] == [
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    ]


def test_automount_off_and_own_tolerations_are_respected(core: Any, namespace: str) -> None:
    body = pod_body("p")
    body["spec"]["automountServiceAccountToken"] = False
    body["spec"]["tolerations"] = [{"key": "", "operator": "Exists"}]
    pod = core.create_namespaced_pod(namespace, body)
    assert not pod.spec.volumes and not pod.spec.containers[0].volume_mounts
    assert [t.key for t in pod.spec.tolerations] == [""]


def test_pod_with_a_missing_service_account_is_forbidden(core: Any, namespace: str) -> None:
    body = pod_body("p")
    body["spec"]["serviceAccountName"] = "ghost"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(namespace, body)
    assert err.value.status == 403
    assert json.loads(err.value.body)["message"] == (
        f'pods "p" is forbidden: error looking up service account {namespace}/ghost: '
        'serviceaccount "ghost" not found'
    )


def test_unbound_pod_is_deleted_at_once(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("p"))
    deleted = core.delete_namespaced_pod("p", namespace)
    assert deleted.metadata.deletion_grace_period_seconds == 0
    assert deleted.metadata.generation == 2
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("p", namespace)
    assert err.value.status == 404


def test_bound_pod_gets_its_grace_period_and_holds_its_name(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, pod_body("p"))
    _bind(cluster, namespace, "p")
    deleted = core.delete_namespaced_pod("p", namespace)
    assert deleted.metadata.deletion_timestamp is not None
    assert deleted.metadata.deletion_grace_period_seconds == 30
    assert deleted.metadata.generation == 2
    assert core.read_namespaced_pod("p", namespace).metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(namespace, pod_body("p"))
    assert err.value.status == 409
    status = json.loads(err.value.body)
    assert (status["reason"], status["message"]) == (
        "AlreadyExists",
        'object is being deleted: pods "p" already exists',
    )
    # a longer grace period does not extend it; a shorter one shortens it; 0 ends it
    assert (
        core.delete_namespaced_pod(
            "p", namespace, grace_period_seconds=60
        ).metadata.deletion_grace_period_seconds
        == 30
    )
    assert (
        core.delete_namespaced_pod(
            "p", namespace, grace_period_seconds=5
        ).metadata.deletion_grace_period_seconds
        == 5
    )
    core.delete_namespaced_pod("p", namespace, grace_period_seconds=0)
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_pod("p", namespace)
    assert gone.value.status == 404


def test_updates_do_not_end_a_grace_period(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, pod_body("p"))
    _bind(cluster, namespace, "p")
    core.delete_namespaced_pod("p", namespace)
    patched = core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"a": "b"}}})
    assert patched.metadata.labels == {"a": "b"}
    assert core.read_namespaced_pod("p", namespace).metadata.deletion_timestamp is not None


def test_a_put_without_the_default_tolerations_gets_them_back(core: Any, namespace: str) -> None:
    """DefaultTolerationSeconds admits updates too (kube-apiserver v1.37): a pod written back
    without the two tolerations it was given is not refused for removing them."""
    core.create_namespaced_pod(namespace, pod_body("tolerant"))
    pod = core.api_client.sanitize_for_serialization(
        core.read_namespaced_pod("tolerant", namespace)
    )
    given = pod["spec"].pop("tolerations")
    assert len(given) == 2
    pod["metadata"]["labels"] = {"edited": "yes"}
    updated = core.replace_namespaced_pod("tolerant", namespace, pod)
    assert [t.key for t in updated.spec.tolerations] == [t["key"] for t in given]
    assert updated.metadata.labels == {"edited": "yes"}
