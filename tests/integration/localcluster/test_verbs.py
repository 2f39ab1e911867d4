"""Write verbs through the official client: conflicts, status split, generation, paging, faults."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import acjob_body, example_crd, pod_body, raw_call

pytestmark = pytest.mark.integration
GROUP, VERSION, PLURAL = "mindxdl.gitee.com", "v1", "ascendjobs"


def _status(err: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(err.value.body)
    return body


def test_create_fills_server_fields_and_generate_name(core: Any, namespace: str) -> None:
    created = core.create_namespaced_pod(
        namespace, {**pod_body(""), "metadata": {"generateName": "worker-"}}
    )
    meta = created.metadata
    assert meta.name.startswith("worker-") and len(meta.name) == len("worker-") + 5
    assert meta.uid and meta.creation_timestamp and meta.resource_version
    assert meta.namespace == namespace
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"
    assert created.spec.scheduler_name == "default-scheduler"
    assert created.spec.termination_grace_period_seconds == 30
    assert created.spec.dns_policy == "ClusterFirst"


def test_duplicate_create_is_409_already_exists(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(namespace, pod_body("dup"))
    assert err.value.status == 409
    status = _status(err)
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'pods "dup" already exists'
    assert status["details"] == {"name": "dup", "kind": "pods"}


def test_body_namespace_mismatch_is_400(core: Any, namespace: str) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(namespace, pod_body("x", namespace="elsewhere"))
    assert err.value.status == 400
    assert _status(err)["reason"] == "BadRequest"


def test_stale_update_gets_409_conflict_with_the_real_message(core: Any, namespace: str) -> None:
    pod = core.create_namespaced_pod(namespace, pod_body("p"))
    stale = core.read_namespaced_pod("p", namespace)
    pod.metadata.labels = {"a": "1"}
    core.replace_namespaced_pod("p", namespace, pod)
    stale.metadata.labels = {"a": "2"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_pod("p", namespace, stale)
    assert err.value.status == 409
    status = _status(err)
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on pods "p": the object has been modified; please apply '
        "your changes to the latest version and try again"
    )


def test_service_gets_a_cluster_ip_and_headless_stays_none(core: Any, namespace: str) -> None:
    svc = core.create_namespaced_service(
        namespace, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    )
    assert svc.spec.cluster_ip.startswith("10.")
    assert svc.spec.type == "ClusterIP"
    assert svc.spec.ports[0].protocol == "TCP" and svc.spec.ports[0].target_port == 80
    headless = core.create_namespaced_service(
        namespace, {"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}}
    )
    assert headless.spec.cluster_ip == "None"


def test_pod_status_split_between_main_resource_and_status(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("p"))
    # a main-resource write does not change status...
    patched = core.patch_namespaced_pod(
        "p", namespace, {"metadata": {"labels": {"x": "1"}}, "status": {"phase": "Running"}}
    )
    assert patched.metadata.labels == {"x": "1"}
    assert patched.status.phase == "Pending"
    # ...and a status write changes nothing but status.
    patched = core.patch_namespaced_pod_status(
        "p", namespace, {"metadata": {"labels": {"x": "2"}}, "status": {"phase": "Running"}}
    )
    assert patched.status.phase == "Running"
    assert patched.metadata.labels == {"x": "1"}


def test_custom_resource_status_split_and_generation(custom: Any, namespace: str) -> None:
    job = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, acjob_body("j"))
    assert job["metadata"]["generation"] == 1
    job["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    job["metadata"]["labels"]["extra"] = "yes"
    updated = custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "j", job)
    assert "status" not in updated or not updated["status"].get("conditions")
    assert updated["metadata"]["generation"] == 1  # metadata-only change
    assert updated["metadata"]["labels"]["extra"] == "yes"

    with_status = custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "j",
        {
            "status": {"conditions": [{"type": "Created", "status": "True"}]},
            "spec": {"schedulerName": "ignored"},
        },
    )
    assert with_status["status"]["conditions"][0]["type"] == "Created"
    assert "schedulerName" not in with_status["spec"]
    assert with_status["metadata"]["generation"] == 1

    spec_change = custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "j", {"spec": {"schedulerName": "volcano"}}
    )
    assert spec_change["metadata"]["generation"] == 2
    assert spec_change["status"]["conditions"][0]["type"] == "Created"


def test_invalid_custom_resource_is_422_with_field_causes(custom: Any, namespace: str) -> None:
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, acjob_body("bad", replicas="two")
        )
    assert err.value.status == 422
    status = _status(err)
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "AscendJob"
    fields = [c["field"] for c in status["details"]["causes"]]
    assert "spec.replicaSpecs.Master.replicas" in fields
    assert "Invalid value" in status["message"]
    with pytest.raises(ApiException):
        custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "bad")


def test_strategic_merge_patch_on_a_custom_resource_is_415(
    cluster: LocalCluster, custom: Any, namespace: str
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, acjob_body("j"))
    code, status = raw_call(
        cluster,
        "PATCH",
        f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/j",
        b'{"spec": {"schedulerName": "x"}}',
        "application/strategic-merge-patch+json",
    )
    assert code == 415
    assert status["reason"] == "UnsupportedMediaType"


def test_list_paging_with_limit_and_continue(core: Any, namespace: str) -> None:
    for i in range(7):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"}})
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map(namespace, limit=3, _continue=token)
        pages += 1
        names.extend(i.metadata.name for i in page.items)
        token = page.metadata._continue
        if not token:
            break
    assert pages == 3
    assert names == [f"cm-{i}" for i in range(7)]


def test_label_and_field_selectors(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("a", labels={"role": "master"}))
    core.create_namespaced_pod(namespace, pod_body("b", labels={"role": "worker"}))
    core.create_namespaced_pod(namespace, pod_body("c"))
    got = core.list_namespaced_pod(namespace, label_selector="role in (master,worker),role!=worker")
    assert [p.metadata.name for p in got.items] == ["a"]
    got = core.list_namespaced_pod(namespace, label_selector="!role")
    assert [p.metadata.name for p in got.items] == ["c"]
    got = core.list_pod_for_all_namespaces(
        field_selector=f"metadata.namespace={namespace},metadata.name=b"
    )
    assert [p.metadata.name for p in got.items] == ["b"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod(namespace, label_selector="role in (")
    assert err.value.status == 400


def test_injected_failures_latency_and_request_counts(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    before = cluster.request_count("create", "pods")
    cluster.faults.fail("create", "pods", code=503, count=1)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(namespace, pod_body("f"))
    assert err.value.status == 503
    assert _status(err)["reason"] == "ServiceUnavailable"
    core.create_namespaced_pod(namespace, pod_body("f"))  # count=1: the next one works
    assert cluster.request_count("create", "pods") == before + 2
    cluster.faults.fail("get", "pods", code=500, percent=100)
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("f", namespace)
    assert err.value.status == 500
    cluster.faults.clear()
    assert core.read_namespaced_pod("f", namespace).metadata.name == "f"


def test_unknown_resource_and_malformed_body_never_500(
    cluster: LocalCluster, namespace: str
) -> None:
    def call(method: str, path: str, data: bytes | None = None) -> tuple[int, dict[str, Any]]:
        return raw_call(cluster, method, path, data)

    code, body = call("GET", "/api/v1/namespaces/default/widgets")
    assert (code, body["kind"], body["reason"]) == (404, "Status", "NotFound")
    code, body = call("POST", f"/api/v1/namespaces/{namespace}/pods", b"{not json")
    assert (code, body["reason"]) == (400, "BadRequest")
    code, body = call("POST", f"/api/v1/namespaces/{namespace}/pods/x", b"{}")
    assert (code, body["reason"]) == (405, "MethodNotAllowed")
    code, body = call("POST", "/api/v1/namespaces/nowhere/pods", json.dumps(pod_body("x")).encode())
    assert (code, body["message"]) == (404, 'namespaces "nowhere" not found')
    code, body = call("POST", "/api/v1/pods", json.dumps(pod_body("x")).encode())
    assert (code, body["reason"]) == (405, "MethodNotAllowed")
    code, body = call("GET", "/version")
    assert code == 200 and body["gitVersion"] == "v1.37.2"


def test_malformed_crd_is_422_and_not_served(cluster: LocalCluster) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Gadget"},
            "versions": [{"name": "v1", "served": True}],
        },
    }
    code, status = raw_call(
        cluster,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json.dumps(crd).encode(),
    )
    assert (code, status["reason"]) == (422, "Invalid")
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {"spec.names.plural", "spec.versions"} <= fields
    code, _ = raw_call(cluster, "GET", "/apis/example.com/v1/namespaces/default/gadgets")
    assert code == 404


def test_crd_created_at_run_time_is_served_and_established(
    cluster: LocalCluster, custom: Any, namespace: str
) -> None:
    spec = {"type": "object", "properties": {"size": {"type": "integer"}}}
    crd = example_crd("Gizmo", {"type": "object", "properties": {"spec": spec}})
    code, created = raw_call(
        cluster,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json.dumps(crd).encode(),
    )
    assert code == 201
    conditions = {c["type"]: c["status"] for c in created["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert created["status"]["acceptedNames"]["kind"] == "Gizmo"
    obj = custom.create_namespaced_custom_object(
        "example.com",
        "v1",
        namespace,
        "gizmos",
        {
            "apiVersion": "example.com/v1",
            "kind": "Gizmo",
            "metadata": {"name": "g"},
            "spec": {"size": 3, "colour": "pruned"},
        },
    )
    assert obj["spec"] == {"size": 3}  # unknown field pruned
    code, _ = raw_call(
        cluster,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com",
    )
    assert code == 200
    code, _ = raw_call(cluster, "GET", f"/apis/example.com/v1/namespaces/{namespace}/gizmos/g")
    assert code == 404


def _sprocket_crd(size_schema: dict[str, Any]) -> dict[str, Any]:
    properties = {"size": size_schema, "color": {"type": "string"}}
    status = {"type": "object", "properties": {"phase": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": properties}, "status": status},
    }
    return example_crd("Sprocket", schema, {"status": {}})


def test_a_tightened_schema_ratchets_what_an_update_leaves_unchanged(
    cluster: LocalCluster, custom: Any, namespace: str
) -> None:
    """Validation ratcheting (GA in Kubernetes 1.33): a custom resource made invalid by a
    stricter CRD can still be updated elsewhere, and its status written, but the invalid
    field cannot be changed to another invalid value."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    code, _ = raw_call(
        cluster, "POST", crds, json.dumps(_sprocket_crd({"type": "integer"})).encode()
    )
    assert code == 201
    body = {"apiVersion": "example.com/v1", "kind": "Sprocket", "metadata": {"name": "s"}}
    custom.create_namespaced_custom_object(
        "example.com", "v1", namespace, "sprockets", {**body, "spec": {"size": 50}}
    )
    stricter = json.dumps({"spec": _sprocket_crd({"type": "integer", "maximum": 10})["spec"]})
    code, _ = raw_call(
        cluster,
        "PATCH",
        f"{crds}/sprockets.example.com",
        stricter.encode(),
        "application/merge-patch+json",
    )
    assert code == 200
    path = f"/apis/example.com/v1/namespaces/{namespace}/sprockets"
    code, _ = raw_call(cluster, "POST", path, json.dumps({**body, "spec": {"size": 50}}).encode())
    assert code == 422, "a new object is validated whole"
    merge = "application/merge-patch+json"
    code, kept = raw_call(cluster, "PATCH", f"{path}/s", b'{"spec":{"color":"red"}}', merge)
    assert code == 200, kept
    assert kept["spec"] == {"size": 50, "color": "red"}
    code, status = raw_call(
        cluster, "PATCH", f"{path}/s/status", b'{"status":{"phase":"Up"}}', merge
    )
    assert code == 200, status
    code, refused = raw_call(cluster, "PATCH", f"{path}/s", b'{"spec":{"size":60}}', merge)
    assert code == 422
    assert [c["field"] for c in refused["details"]["causes"]] == ["spec.size"]
    code, _ = raw_call(cluster, "PATCH", f"{path}/s", b'{"spec":{"size":5}}', merge)
    assert code == 200
    code, _ = raw_call(cluster, "DELETE", f"{crds}/sprockets.example.com")
    assert code == 200


def test_yaml_body_with_a_timestamp_is_accepted(cluster: LocalCluster, namespace: str) -> None:
    body = (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n"
        b"data:\n  when: '2024-01-01'\n  note: hello\n"
        b"  x: x\n"
    )
    code, created = raw_call(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", body, "application/yaml"
    )
    assert code == 201, created
    assert created["data"]["when"] == "2024-01-01"
    annotated = (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: z\n"
        b"  creationTimestamp: 2024-01-01T00:00:00Z\n"
    )
    code, created = raw_call(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", annotated, "application/yaml"
    )
    assert code == 201, created
    assert created["metadata"]["creationTimestamp"] != "2024-01-01T00:00:00Z"  # server-set


def test_custom_resource_put_without_resource_version_is_422(custom: Any, namespace: str) -> None:
    job = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, acjob_body("norv")
    )
    del job["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as err:
        custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "norv", job)
    assert err.value.status == 422
    assert _status(err)["details"]["causes"][0]["field"] == "metadata.resourceVersion"


def test_a_rejected_write_leaves_the_object_untouched(custom: Any, namespace: str) -> None:
    job = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, acjob_body("keep")
    )
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            "keep",
            {"spec": {"replicaSpecs": {"Master": {"replicas": "two"}}}},
        )
    assert err.value.status == 422
    after = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "keep")
    assert after == job


def test_concurrent_updates_from_one_version_let_exactly_one_win(core: Any, namespace: str) -> None:
    import threading

    core.create_namespaced_config_map(namespace, {"metadata": {"name": "race"}})
    base = core.read_namespaced_config_map("race", namespace)
    outcomes: list[int] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        body = {
            "metadata": {"name": "race", "resourceVersion": base.metadata.resource_version},
            "data": {"writer": str(i)},
        }
        try:
            core.replace_namespaced_config_map("race", namespace, body)
            code = 200
        except ApiException as err:
            code = err.status
        with lock:
            outcomes.append(code)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(outcomes) == [200] + [409] * 7


def test_pod_spec_is_immutable_but_image_and_labels_change(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("imm"))
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("imm", namespace, {"spec": {"restartPolicy": "Never"}})
    assert err.value.status == 422
    assert "pod updates may not change fields" in _status(err)["message"]
    pod = core.read_namespaced_pod("imm", namespace)
    pod.spec.containers[0].image = "busybox:1.37"
    pod.metadata.labels = {"changed": "yes"}
    updated = core.replace_namespaced_pod("imm", namespace, pod)
    assert updated.spec.containers[0].image == "busybox:1.37"


def test_binding_assigns_a_node_once(cluster: LocalCluster, core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod_body("b"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/b/binding"
    code, status = raw_call(cluster, "POST", path, json.dumps(binding).encode())
    assert (code, status["status"]) == (201, "Success")
    pod = core.read_namespaced_pod("b", namespace)
    assert pod.spec.node_name == "node-a"
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    code, status = raw_call(cluster, "POST", path, json.dumps(binding).encode())
    assert (code, status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on pods/binding "b": pod b is already assigned to node '
        '"node-a"'
    )
    code, status = raw_call(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/pods/b/status")
    assert code == 405
    assert core.read_namespaced_pod("b", namespace).metadata.name == "b"
