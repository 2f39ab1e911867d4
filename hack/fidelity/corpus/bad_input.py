"""Malformed and mistaken requests: each must get the real server's Status, never a hang."""

from __future__ import annotations

from typing import Any

from hack.fidelity.corpus.objects import (
    IMAGE,
    configmap,
    core_event,
    crd,
    lease,
    new_event,
    pod,
    service,
)
from hack.fidelity.steps import Step, case, ns_path, patch, post, prep, put

CM_PATH = ns_path("configmaps")
_NEW_EVENTS = "/apis/events.k8s.io/v1/namespaces/{ns}/events"


def _nested(opening: bytes, closing: bytes, levels: int) -> bytes:
    """A ConfigMap named `deep` whose unknown field `x` nests `levels` levels."""
    head = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":'
    return head + opening * levels + b"1" + closing * levels + b"}"


def _versioned(body: dict[str, Any], version: str) -> dict[str, Any]:
    return {**body, "metadata": {**body["metadata"], "resourceVersion": version}}


def _mounting(name: str, *mounts: dict[str, Any]) -> dict[str, Any]:
    """A pod with one emptyDir volume `v`, whose container has these volumeMounts."""
    container = {"name": "c", "image": IMAGE, "volumeMounts": list(mounts)}
    return pod(name, volumes=[{"name": "v", "emptyDir": {}}], containers=[container])


def _unknown_in_pod(name: str) -> dict[str, Any]:
    """A pod with unknown fields at several depths (in a list, in a list in a list)."""
    container = {"name": "c", "image": IMAGE, "imagee": "x", "env": [{"name": "A", "vlue": "1"}]}
    body = pod(name, containers=[container], nodeSelector={"any": "key"})
    body["spec"]["字段"] = 1
    body["metadata"]["labelz"] = {"a": "b"}
    body["Status"] = {}
    return body


def _unknown_in_service(name: str) -> dict[str, Any]:
    body = service(name)
    body["spec"]["ports"] = [{"port": 80, "protocl": "TCP"}]
    return body


def _unknown_in_crd(plural: str) -> dict[str, Any]:
    """A CRD whose schema has a misspelt keyword in a property (a map of schemas)."""
    spec = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "defualt": {}}
    return crd(plural, "Gizmo", {"type": "object", "properties": {"spec": spec}})


CASES = [
    case(
        "bad-create-with-resource-version-500",
        post("configmaps", {**configmap("c"), "metadata": {"name": "c", "resourceVersion": "5"}}),
    ),
    # etcd3's store refuses only a version that parses as a non-zero uint64, after
    # validation, and a dry run's storage not at all (make fuzz, seed 37).
    case(
        "create-resource-version-forms",
        *[
            post("configmaps", _versioned(configmap(f"c{i}"), rv))
            for i, rv in enumerate(("abc", "0", "05", "-1", "+5", "18446744073709551616"))
        ],
        post("configmaps?dryRun=All", _versioned(configmap("d"), "5")),
        post("configmaps?dryRun=All", _versioned(configmap("e"), "abc")),
        post("pods", _versioned({**pod("p"), "spec": {"containers": []}}, "7")),
    ),
    case(
        "bad-pod-host-path-422",
        *[
            post("pods", pod(f"h{i}", volumes=[{"name": "v", "hostPath": source}]))
            for i, source in enumerate(
                ({}, {"path": ""}, {"type": "Directory"}, {"path": "/a/../b"}, {"path": "rel/x"})
            )
        ],
        # a valid pod's volume sources, defaulted (the rank table's configMap among them)
        post(
            "pods",
            pod(
                "d",
                volumes=[
                    {"name": "c", "configMap": {"name": "rt"}},
                    {"name": "s", "secret": {"secretName": "x"}},
                    {"name": "h", "hostPath": {"path": "/tmp"}},
                ],
            ),
        ),
    ),
    # A container's ports and env decoded as Go decodes them (make fuzz, seed 43: a job
    # Succeeded here and failed there on a port name that was an object).
    case(
        "bad-pod-container-ports-and-env-400",
        *[
            post("pods", pod(f"c{i}", containers=[{"name": "c", "image": IMAGE, **fields}]))
            for i, fields in enumerate(
                (
                    {"ports": [{"name": {}, "containerPort": 80}]},
                    {"ports": [{"containerPort": 80, "protocol": 5}]},
                    {"ports": "x"},
                    {"env": [{"name": "A", "valueFrom": 1}]},
                    {"env": [{"name": "A", "value": 3}]},
                    {"volumeMounts": [{"name": "v", "mountPath": 1}], "env": [{"name": 1}]},
                )
            )
        ],
    ),
    case(
        "bad-pod-volume-mount-paths-422",
        post("pods", _mounting("m0", {"name": "v"})),
        post("pods", _mounting("m1", {"name": "v", "mountPath": ""})),
        post(
            "pods",
            _mounting("m2", {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}),
        ),
        post("pods", _mounting("m3", {"name": "v"}, {"name": "w"})),
    ),
    case(
        "bad-labels-as-string-400",
        post("configmaps", {**configmap("c"), "metadata": {"name": "c", "labels": "a=b"}}),
    ),
    case(
        "bad-annotations-non-string-values-400",
        post("configmaps", {**configmap("c"), "metadata": {"name": "c", "annotations": {"a": 1}}}),
    ),
    case(
        "bad-unknown-field-non-latin1-warns",
        post(
            "pods",
            {**pod("p"), "spec": {**pod("p")["spec"], "字段": 1}},
            pick=("metadata.name",),
            headers=("Warning",),
        ),
    ),
    case(
        "bad-unknown-field-strict-400",
        post("pods?fieldValidation=Strict", {**pod("p"), "spec": {**pod("p")["spec"], "bogus": 1}}),
    ),
    # Every write of a built-in kind decodes its body into the Go struct: the fields it does
    # not have are dropped and named with their path (builtin_fields.py).
    case(
        "unknown-fields-of-built-in-kinds",
        post("pods", _unknown_in_pod("w"), headers=("Warning",)),
        post("pods?fieldValidation=Strict", _unknown_in_pod("s")),
        post("pods?fieldValidation=Ignore", _unknown_in_pod("i"), headers=("Warning",)),
        patch("pods/w", {"metadata": {"bogus": 1}}, headers=("Warning",)),
        patch("pods/w", {"metadata": {"bogus": 1}}, "strategic", headers=("Warning",)),
        # Under Strict a patch gets the patcher's 422, quoting the strategic patch as Go
        # prints it (a merge patch's result is quoted in Go's struct order: not compared)
        patch("pods/w?fieldValidation=Strict", {"metadata": {"bogus": 1}}, "strategic"),
        patch(
            "pods/w?fieldValidation=Strict",
            {"metadata": {"labels": {"a": "b"}, "x": [1.5, None, True, "s"]}},
            "strategic",
        ),
        patch("pods/w/status", {"status": {"phaze": "x"}}, headers=("Warning",)),
        post("configmaps", {**configmap("c"), "extra": {"a": 1}}, headers=("Warning",)),
        put("configmaps/c", {**configmap("c"), "extra": 2, "Data": {}}, headers=("Warning",)),
        post("services", _unknown_in_service("svc"), headers=("Warning",), pick=("spec.ports",)),
        post("leases", {**lease("l"), "spec": {"holder": "x"}}, headers=("Warning",)),
        post(
            "events",
            core_event(
                "e", involvedObject={"kind": "Pod", "name": "w", "namespace": "{ns}", "x": 1}
            ),
            headers=("Warning",),
            pick=("involvedObject",),
        ),
        # events.k8s.io/v1 is converted to core/v1 for storage: its own fields are checked
        Step("POST", _NEW_EVENTS, {**new_event("ne"), "notee": "x"}, headers=("Warning",)),
        Step("POST", _NEW_EVENTS + "?fieldValidation=Strict", {**new_event("ns"), "notee": "x"}),
        Step(
            "PATCH",
            _NEW_EVENTS + "/ne?fieldValidation=Strict",
            {"regarding": {"bogus": 1}},
            content_type="application/strategic-merge-patch+json",
        ),
        Step(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All",
            _unknown_in_crd("g{run}gizmos"),
            headers=("Warning",),
            pick=("spec.versions",),
        ),
    ),
    case(
        "bad-json-body-400",
        Step("POST", CM_PATH, raw=b'{"apiVersion": "v1", "kind": "ConfigMap", '),
    ),
    case(
        "bad-empty-body",
        Step("POST", CM_PATH, raw=b""),
    ),
    # Go's scanner takes 10,000 levels (the object itself is one) and refuses the next before
    # decoding anything. At 9,999 the ConfigMap is created without its unknown field `x`,
    # with a Warning (the local cluster decodes deeper documents itself).
    # A body that is no JSON object, and one behind a byte-order mark: the decode errors
    # summarize such a body in hex (found by `make fuzz`, seed 31).
    case(
        "bad-json-not-an-object",
        Step("POST", CM_PATH, raw=b"null"),
        Step("POST", CM_PATH, raw=b"[1, 2]"),
        Step("POST", CM_PATH, raw=b'"x"'),
        Step("POST", CM_PATH, raw=b"5"),
        Step("POST", CM_PATH, raw=b'\xef\xbb\xbf{"apiVersion":"v1","kind":"ConfigMap"}'),
    ),
    case(
        "bad-json-too-deep-400",
        Step("POST", CM_PATH, raw=_nested(b'{"a":', b"}", 10_000)),
        Step("POST", CM_PATH, raw=_nested(b"[", b"]", 10_000)),
        Step("POST", CM_PATH, raw=_nested(b'{"a":', b"}", 9_999), headers=("Warning",)),
    ),
    # Go's scanner reads the whole body before decoding it: trailing data, a cut-off body and
    # every kind of bad byte get its message (found by `make fuzz`, seed 31; gojson_syntax.py).
    case(
        "bad-json-syntax-go-scanner-400",
        *[
            Step("POST", CM_PATH, raw=raw)
            for raw in (
                b'{"apiVersion":"v1","kind":"ConfigMap"} {"extra": true}',
                b'{"apiVersion":"v1","kind":"ConfigMap"}x',
                b'{"apiVersion":"v1","kind":"Conf',
                b'{"apiVersion":"v1","kind" "ConfigMap"}',
                b'{"apiVersion":"v1" "kind":"ConfigMap"}',
                b'{"apiVersion":"v1","data":[1 2]}',
                b'{"apiVersion":"v1","data":tru}',
                b'{"apiVersion":"v1","data":"\x01"}',
                b'{"apiVersion":"v1","data":"\\q"}',
                b'{"apiVersion":"v1","data":"\\u12g4"}',
                b'{"apiVersion":"v1","data":1.}',
                b'{"apiVersion":"v1","data":1e+}',
                b'{"apiVersion":"v1","data":-',
                b'{"apiVersion":"v1","data":[1,]}',
                b'{"apiVersion":"v1","data":-Infinity}',
                b'{"apiVersion":"v1","kind":"ConfigMap"} \xc3\xa9',
            )
        ],
    ),
    case(
        "bad-kind-mismatch-400",
        post("configmaps", {**configmap("c"), "kind": "Secret"}),
    ),
    case(
        "bad-api-version-mismatch-400",
        post("configmaps", {**configmap("c"), "apiVersion": "apps/v1"}),
    ),
    case(
        "bad-name-mismatch-on-put-400",
        prep(post("configmaps", configmap("c"))),
        put("configmaps/c", configmap("other")),
    ),
    case(
        "bad-namespace-mismatch-400",
        post("configmaps", configmap("c", namespace="elsewhere")),
    ),
    case(
        "bad-invalid-name-422",
        post("configmaps", configmap("Bad_Name")),
        post(
            "services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "1svc"},
                "spec": {"ports": [{"port": 80}]},
            },
        ),
    ),
    case(
        "bad-missing-name-422",
        post("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    ),
    case(
        "bad-post-to-named-resource-405",
        post("configmaps/c", configmap("c")),
    ),
    case(
        "bad-unknown-resource-404",
        Step("GET", "/api/v1/namespaces/{ns}/widgets"),
        Step("GET", "/apis/mindxdl.gitee.com/v1/namespaces/{ns}/nothings/x"),
    ),
    case(
        "bad-patch-body-not-json-400",
        prep(post("configmaps", configmap("c"))),
        Step(
            "PATCH", CM_PATH + "/c", raw=b"{not json", content_type="application/merge-patch+json"
        ),
    ),
    case(
        "bad-json-patch-not-a-list",
        prep(post("configmaps", configmap("c"))),
        patch("configmaps/c", {"op": "add"}, "json"),
    ),
    case(
        "bad-pod-without-containers-422",
        post(
            "pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": []},
            },
        ),
    ),
    case(
        "bad-pod-container-name-422",
        post("pods", pod("p", containers=[{"name": "UPPER", "image": IMAGE}])),
    ),
    # PodSpec's scalars and volumes, decoded as Go does (make fuzz, seed 31).
    case(
        "bad-pod-spec-types-400",
        post("pods", {**pod("p"), "spec": {**pod("p")["spec"], "schedulerName": 1}}),
        post("pods", {**pod("p"), "spec": {**pod("p")["spec"], "hostNetwork": "true"}}),
        post(
            "pods", {**pod("p"), "spec": {**pod("p")["spec"], "volumes": [{"name": "b", "nfs": 1}]}}
        ),
        post("pods", {**pod("p"), "spec": {**pod("p")["spec"], "volumes": [1]}}),
    ),
    case(
        "bad-pod-configmap-volume-without-name-422",
        post(
            "pods",
            {**pod("p"), "spec": {**pod("p")["spec"], "volumes": [{"name": "a", "configMap": {}}]}},
        ),
    ),
    case(
        "bad-pod-command-not-a-list-400",
        post("pods", pod("p", containers=[{"name": "c", "image": IMAGE, "command": 5}])),
    ),
    case(
        "bad-pod-mount-of-no-volume-422",
        post(
            "pods",
            pod(
                "p",
                containers=[
                    {
                        "name": "c",
                        "image": IMAGE,
                        "volumeMounts": [{"name": "x", "mountPath": "/x"}],
                    }
                ],
            ),
        ),
    ),
    case(
        "bad-pod-image-object-400",
        post("pods", pod("p", containers=[{"name": "c", "image": {"name": IMAGE}}])),
    ),
    case("bad-pod-node-selector-string-400", post("pods", pod("p", nodeSelector="a=b"))),
    case(
        "bad-pod-env-value-from-empty-422",
        post(
            "pods",
            pod(
                "p",
                containers=[{"name": "c", "image": IMAGE, "env": [{"name": "A", "valueFrom": {}}]}],
            ),
        ),
    ),
    case(
        "bad-pod-nfs-relative-path-422",
        post("pods", pod("p", volumes=[{"name": "v", "nfs": {"server": "s", "path": "data"}}])),
    ),
    case(
        "bad-pod-volume-without-name-422",
        post("pods", pod("p", volumes=[{"emptyDir": {}}])),
    ),
    case(
        "bad-yaml-body-accepted",
        Step(
            "POST",
            CM_PATH,
            raw=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n",
            content_type="application/yaml",
            pick=("metadata.name", "data"),
        ),
    ),
]
