"""Built-in kind validation: the 422 causes kube-apiserver words for the common mistakes."""

from __future__ import annotations

from typing import Any

from ascendjob_controller.localcluster import validation


def _svc(**spec: Any) -> dict[str, Any]:
    return {"kind": "Service", "spec": {"ports": [{"port": 80, "targetPort": 80}], **spec}}


def test_pod_needs_containers() -> None:
    assert validation.on_create("Pod", {"spec": {"containers": []}}) == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}
    ]
    assert (
        validation.on_create("Pod", {"spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        == []
    )


def test_pod_container_volume_and_mount_names() -> None:
    spec = {
        "initContainers": [
            {
                "name": "init-1",
                "image": "i",
                "volumeMounts": [{"name": "ranktable", "mountPath": "/r"}],
            }
        ],
        "containers": [
            {
                "name": "UPPER",
                "image": "i",
                "volumeMounts": [
                    {"name": "nowhere"},
                    {"mountPath": "/x"},
                    {"name": "ranktable", "mountPath": "/x"},
                ],
            },
            {"name": "x" * 64, "image": "i"},
            {"image": "i"},
        ],
        "volumes": [{"name": "ranktable"}, {"emptyDir": {}}],
    }
    causes = validation.on_create("Pod", {"spec": spec})
    # kube-apiserver's order: volumes, containers, init containers.
    assert [(c["field"], c["reason"]) for c in causes] == [
        ("spec.volumes[1].name", "FieldValueRequired"),
        ("spec.containers[0].name", "FieldValueInvalid"),
        ("spec.containers[0].volumeMounts[0].name", "FieldValueNotFound"),
        ("spec.containers[0].volumeMounts[0].mountPath", "FieldValueRequired"),
        ("spec.containers[0].volumeMounts[1].name", "FieldValueRequired"),
        ("spec.containers[0].volumeMounts[1].name", "FieldValueNotFound"),
        ("spec.containers[0].volumeMounts[2].mountPath", "FieldValueInvalid"),
        ("spec.containers[1].name", "FieldValueInvalid"),
        ("spec.containers[2].name", "FieldValueRequired"),
    ]
    assert causes[1]["message"].startswith(
        'Invalid value: "UPPER": a lowercase RFC 1123 label must consist of lower case'
    )
    assert causes[2]["message"] == 'Not found: "nowhere"'
    assert causes[5]["message"] == 'Not found: ""'
    # kube-apiserver v1.37's words for a mount path given twice in one container
    assert causes[6]["message"] == 'Invalid value: "/x": must be unique'
    assert causes[7]["message"].endswith(": must be no more than 63 characters")
    valid = {
        "containers": [
            {"name": "ascend", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
            {"name": "a-1", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
        ],
        "volumes": [{"name": "v"}],
    }
    assert validation.on_create("Pod", {"spec": valid}) == []


def test_pod_env_sources_and_nfs_paths() -> None:
    spec = {
        "containers": [
            {
                "name": "c",
                "image": "i",
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "B", "valueFrom": {}},
                    {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                ],
            }
        ],
        "volumes": [
            {"name": "a", "nfs": {"server": "s", "path": "data"}},
            {"name": "b", "nfs": {"server": "s", "path": "/data"}},
        ],
    }
    causes = validation.on_create("Pod", {"spec": spec})
    assert [(c["field"], c["message"]) for c in causes] == [
        ("spec.volumes[0].nfs.path", 'Invalid value: "data": must be an absolute path'),
        (
            "spec.containers[0].env[1].valueFrom",
            'Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, '
            "`configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
        ),
    ]


def test_pod_tolerations_can_grow_and_change_seconds_but_not_shrink() -> None:
    old = {"spec": {"tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": 5}]}}
    grown = {
        "spec": {
            "tolerations": [
                {"key": "a", "operator": "Exists", "tolerationSeconds": 9},
                {"key": "b"},
            ]
        }
    }
    assert validation.on_update("Pod", old, grown, "") == []
    (cause,) = validation.on_update("Pod", old, {"spec": {"tolerations": [{"key": "b"}]}}, "")
    assert cause["message"] == (
        "Forbidden: existing toleration can not be modified except its tolerationSeconds"
    )


def test_service_ports_and_cluster_ip() -> None:
    bad = _svc(ports=[{"port": 70000}])
    assert [c["field"] for c in validation.on_create("Service", bad)] == ["spec.ports[0].port"]
    old = _svc(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"])
    moved = _svc(clusterIP="10.96.0.99", clusterIPs=["10.96.0.10"])
    (cause,) = validation.on_update("Service", old, moved, "")
    assert cause == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: ["10.96.0.99"]: may not change once set',
        "field": "spec.clusterIPs[0]",
    }
    assert validation.on_update("Service", old, old, "") == []
    lb = {**old, "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}
    (cause,) = validation.on_update("Service", old, lb, "status")
    assert cause["field"] == "status.loadBalancer.ingress"


def test_configmap_keys_and_immutability() -> None:
    (cause,) = validation.on_create("ConfigMap", {"data": {"bad key!": "v"}})
    assert cause["field"] == "data[bad key!]"
    old = {"immutable": True, "data": {"k": "v"}}
    assert validation.on_update("ConfigMap", old, {"immutable": True, "data": {"k": "w"}}, "") == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: field is immutable when `immutable` is set",
            "field": "data",
        }
    ]
    assert validation.on_update("ConfigMap", old, dict(old), "") == []


def test_lease_duration_and_namespace_phase() -> None:
    (cause,) = validation.on_create("Lease", {"spec": {"leaseDurationSeconds": 0}})
    assert cause["message"] == "Invalid value: 0: must be greater than 0"
    ns = {"metadata": {"name": "n"}, "status": {"phase": "Terminating"}}
    (cause,) = validation.on_update("Namespace", ns, ns, "status")
    assert cause["field"] == "status.Phase"
    ns["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert validation.on_update("Namespace", ns, ns, "status") == []


def test_configmap_values_total_at_most_one_mebibyte() -> None:
    limit = validation.CONFIG_MAP_MAX_BYTES
    assert validation.on_create("ConfigMap", {"data": {"a": "x" * (limit - 1), "b": "y"}}) == []
    (cause,) = validation.on_create("ConfigMap", {"data": {"a": "x" * limit, "b": "y"}})
    assert cause["reason"] == "FieldValueTooLong"
    assert cause["message"] == f"Too long: may not be more than {limit} bytes"
    # UTF-8 bytes, not characters; binaryData counts its decoded bytes.
    assert validation.on_create("ConfigMap", {"data": {"a": "é" * (limit // 2 + 1)}})
    half = "A" * (limit // 2 // 3 * 4)  # base64 of limit/2 bytes, give or take
    assert (
        validation.on_create(
            "ConfigMap", {"data": {"a": "x" * (limit // 2)}, "binaryData": {"b": half}}
        )
        == []
    )
    grown = {"data": {"a": "x" * (limit + 1)}}
    assert validation.on_update("ConfigMap", {"data": {}}, grown, "")


def test_a_host_path_volume_needs_a_path_without_backsteps() -> None:
    """kube-apiserver v1.37's answers to the same pods (make fuzz, seed 41)."""

    def causes(host_path: dict[str, Any]) -> list[tuple[str, str]]:
        spec = {
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "v", "hostPath": host_path}],
        }
        return [(c["field"], c["message"]) for c in validation.on_create("Pod", {"spec": spec})]

    required = [("spec.volumes[0].hostPath.path", "Required value")]
    assert causes({}) == required
    assert causes({"path": ""}) == required
    assert causes({"type": "Directory"}) == required
    assert causes({"path": "/a/../b"}) == [
        ("spec.volumes[0].hostPath.path", "Invalid value: \"/a/../b\": must not contain '..'")
    ]
    assert causes({"path": "rel/x"}) == causes({"path": "/a/..b"}) == []


def test_common_volume_sources_are_defaulted_as_the_api_server_does() -> None:
    """kube-apiserver v1.37 stores these defaults (the fidelity case bad-pod-host-path-422)."""
    from ascendjob_controller.localcluster.builtin import default_pod_spec

    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [
            {"name": "c", "configMap": {"name": "rt"}},
            {"name": "s", "secret": {"secretName": "x", "defaultMode": 256}},
            {"name": "h", "hostPath": {"path": "/tmp"}},
            {"name": "e", "emptyDir": {}},
        ],
    }
    default_pod_spec(spec)
    assert spec["volumes"] == [
        {"name": "c", "configMap": {"name": "rt", "defaultMode": 420}},
        {"name": "s", "secret": {"secretName": "x", "defaultMode": 256}},
        {"name": "h", "hostPath": {"path": "/tmp", "type": ""}},
        {"name": "e", "emptyDir": {}},
    ]


def _messages(causes: list[dict[str, str]]) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in causes]


def test_port_names_are_iana_service_names() -> None:
    """IsValidPortName's problems, each its own cause (kube-apiserver v1.37.2's answers,
    fidelity case bad-pod-ports-selector-and-volumes)."""
    assert validation.port_name_errors("http-2") == []
    assert validation.port_name_errors("\u200b") == [
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        "must contain at least one letter (a-z)",
    ]
    assert validation.port_name_errors("a-very-long-port-name") == [
        "must be no more than 15 characters"
    ]
    assert validation.port_name_errors("-a--b") == [
        "must not contain consecutive hyphens",
        "must not begin or end with a hyphen",
    ]


def test_container_ports_then_env_then_the_pods_policy_and_node_selector() -> None:
    container = {
        "name": "c",
        "image": "i",
        "ports": [
            {"name": "http", "containerPort": 80, "protocol": "TCP"},
            {"name": "http", "containerPort": 0, "hostPort": 70000, "protocol": "ICMP"},
        ],
        "env": [{"name": "A", "valueFrom": {}}],
    }
    spec = {"containers": [container], "restartPolicy": "Sometimes", "nodeSelector": {"a": "b c"}}
    assert _messages(validation.on_create("Pod", {"spec": spec})) == [
        'spec.containers[0].ports[1].name: Duplicate value: "http"',
        "spec.containers[0].ports[1].containerPort: Required value",
        "spec.containers[0].ports[1].hostPort: Invalid value: 70000: must be between 1 and "
        "65535, inclusive",
        'spec.containers[0].ports[1].protocol: Unsupported value: "ICMP": supported values: '
        '"SCTP", "TCP", "UDP"',
        'spec.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: '
        "`fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"',
        'spec.nodeSelector: Invalid value: "b c": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]


def test_service_port_names_protocols_and_target_ports() -> None:
    svc = _svc(
        ports=[
            {"name": "a", "port": 80, "targetPort": 80},
            {"port": 81, "targetPort": 81},
            {"name": "a", "port": 82, "protocol": "ICMP", "targetPort": "Bad"},
        ]
    )
    assert _messages(validation.on_create("Service", svc)) == [
        "spec.ports[1].name: Required value",
        'spec.ports[2].name: Duplicate value: "a"',
        'spec.ports[2].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        'spec.ports[2].targetPort: Invalid value: "Bad": must contain only alpha-numeric '
        "characters (a-z, 0-9), and hyphens (-)",
    ]
    one = _svc(ports=[{"port": 80, "targetPort": 80}])
    assert validation.on_create("Service", one) == []  # one port needs no name


def test_a_container_image_is_given_without_surrounding_space() -> None:
    """validateContainers' image checks come after the common ones (kube-apiserver v1.37.2:
    a bad port name is listed before the image's cause)."""
    bad_port = {"name": "c", "image": " ", "ports": [{"name": "Bad", "containerPort": 80}]}
    assert _messages(validation.on_create("Pod", {"spec": {"containers": [bad_port]}}))[1:] == [
        'spec.containers[0].image: Invalid value: " ": must not have leading or trailing whitespace'
    ]
    for image, message in ((None, "Required value"), ("", "Required value"), ("\u3000x", None)):
        spec = {"containers": [{"name": "c", "image": image}]}
        got = _messages(validation.on_create("Pod", {"spec": spec}))
        assert got == [f"spec.containers[0].image: {message}"] if message else len(got) == 1
    assert (
        validation.on_create("Pod", {"spec": {"containers": [{"name": "c", "image": "x"}]}}) == []
    )
