"""Deletion: garbage collection by ownerReferences, propagation policies, finalizers, namespaces."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .conftest import acjob_body, eventually, pod_body

pytestmark = pytest.mark.integration
GROUP, VERSION, PLURAL = "mindxdl.gitee.com", "v1", "ascendjobs"


def _owner_ref(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "AscendJob",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _job_with_children(core: Any, custom: Any, namespace: str, name: str) -> dict[str, Any]:
    job = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, acjob_body(name)
    )
    ref = _owner_ref(job)
    for i in range(2):
        core.create_namespaced_pod(namespace, pod_body(f"{name}-master-{i}", ownerReferences=[ref]))
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": f"{name}-svc", "ownerReferences": [ref]},
            "spec": {"clusterIP": "None"},
        },
    )
    return job


def _pod_names(core: Any, namespace: str) -> list[str]:
    return sorted(p.metadata.name for p in core.list_namespaced_pod(namespace).items)


def test_deleted_jobs_pods_and_service_are_garbage_collected(
    core: Any, custom: Any, namespace: str
) -> None:
    _job_with_children(core, custom, namespace, "j")
    core.create_namespaced_pod(namespace, pod_body("unowned"))
    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "j")
    eventually(lambda: _pod_names(core, namespace) == ["unowned"], message="pods not collected")
    eventually(lambda: not core.list_namespaced_service(namespace).items)


def test_foreground_deletion_removes_dependents_before_the_owner(
    core: Any, custom: Any, namespace: str
) -> None:
    _job_with_children(core, custom, namespace, "fg")
    custom.delete_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "fg",
        body=client.V1DeleteOptions(propagation_policy="Foreground"),
    )

    def owner_gone() -> bool:
        try:
            custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "fg")
        except ApiException as err:
            return err.status == 404
        return False

    eventually(owner_gone, message="foreground owner never went away")
    assert _pod_names(core, namespace) == []


def test_orphan_deletion_keeps_dependents_and_drops_their_owner_refs(
    core: Any, custom: Any, namespace: str
) -> None:
    _job_with_children(core, custom, namespace, "orph")
    custom.delete_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "orph",
        body=client.V1DeleteOptions(propagation_policy="Orphan"),
    )

    def orphaned() -> bool:
        pods = core.list_namespaced_pod(namespace).items
        return all(not p.metadata.owner_references for p in pods)

    # The owner waits behind its `orphan` finalizer until the collector stripped the refs.
    eventually(orphaned, message="dependents kept their owner reference")
    pods = core.list_namespaced_pod(namespace).items
    assert sorted(p.metadata.name for p in pods) == ["orph-master-0", "orph-master-1"]


def test_a_finalizer_holds_deletion_until_removed(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("held", finalizers=["example.com/hold"]))
    core.delete_namespaced_pod("held", namespace)
    pod = core.read_namespaced_pod("held", namespace)
    assert pod.metadata.deletion_timestamp is not None
    assert pod.metadata.finalizers == ["example.com/hold"]
    core.patch_namespaced_pod("held", namespace, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("held", namespace)
    assert err.value.status == 404


def test_delete_preconditions_are_checked(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("pre"))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod(
            "pre",
            namespace,
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid")),
        )
    assert err.value.status == 409
    assert "the UID in the precondition (not-the-uid) does not match the UID in record" in (
        err.value.body
    )
    assert core.read_namespaced_pod("pre", namespace).metadata.name == "pre"


def test_delete_collection_by_label(core: Any, namespace: str) -> None:
    for i in range(3):
        core.create_namespaced_pod(namespace, pod_body(f"w{i}", labels={"role": "w"}))
    core.create_namespaced_pod(namespace, pod_body("keep"))
    core.delete_collection_namespaced_pod(namespace, label_selector="role=w")
    assert _pod_names(core, namespace) == ["keep"]


def test_deleting_a_namespace_deletes_its_contents(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("p"))
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})
    core.delete_namespace(namespace)

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
        except ApiException as err:
            return err.status == 404
        return False

    eventually(gone, message="namespace never went away")
    assert not core.list_namespaced_pod(namespace).items
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(namespace, pod_body("late"))
    assert err.value.status == 404


def test_creating_in_a_terminating_namespace_is_403_with_its_cause(
    core: Any, namespace: str
) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    core.delete_namespace(namespace)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "late"}})
    assert err.value.status == 403
    status = json.loads(err.value.body)
    assert status["message"] == (
        f'configmaps "late" is forbidden: unable to create new content in namespace {namespace} '
        "because it is being terminated"
    )
    assert status["details"] == {
        "name": "late",
        "kind": "configmaps",
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ],
    }
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
