"""Bad input gets the answers kube-apiserver v1.37 gives, promptly, and never hangs the server."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def _post(cluster: Any, path: str, body: Any, query: str = "") -> tuple[int, Any, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=5)
    try:
        conn.request("POST", path + query, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read()), resp.headers
    finally:
        conn.close()


def test_create_with_a_resource_version_is_an_internal_error(bare_cluster: Any) -> None:
    body = {"metadata": {"name": "rv", "resourceVersion": "12"}, "data": {}}
    code, status, _ = _post(bare_cluster, "/api/v1/namespaces/default/configmaps", body)
    assert code == 500
    # the storage layer's own error: no reason, no details
    assert "reason" not in status and "details" not in status
    assert status["message"] == "resourceVersion should not be set on objects to be created"


@pytest.mark.parametrize(
    ("version", "code"),
    [
        ("05", 500),
        ("abc", 201),
        ("0", 201),
        ("-1", 201),
        ("+5", 201),
        ("18446744073709551616", 201),
    ],
)
def test_only_a_version_etcd_could_hold_is_refused_on_create(
    bare_cluster: Any, version: str, code: int
) -> None:
    """etcd3's store refuses a create whose resourceVersion parses as a non-zero uint64; it
    drops any other (kube-apiserver v1.37's answers to the same bodies)."""
    body = {"metadata": {"name": f"rv-{version.encode().hex()}", "resourceVersion": version}}
    got, status, _ = _post(bare_cluster, "/api/v1/namespaces/default/configmaps", body)
    assert got == code
    if code == 201:
        assert status["metadata"]["resourceVersion"] != version


def test_a_kind_without_generation_keeps_the_one_it_was_sent(bare_cluster: Any) -> None:
    """kube-apiserver v1.37 stores a ConfigMap's metadata.generation as sent; a kind that
    tracks spec changes starts at 1 (the fidelity case metadata-int64-forms)."""
    body = {"metadata": {"name": "gen", "generation": 7}}
    code, status, _ = _post(bare_cluster, "/api/v1/namespaces/default/configmaps", body)
    assert (code, status["metadata"]["generation"]) == (201, 7)
    job = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "gen", "generation": 7, "labels": {"framework": "pytorch"}},
        "spec": {"replicaSpecs": {"Master": {"replicas": 1}}},
    }
    code, status, _ = _post(bare_cluster, ACJOBS, job)
    assert (code, status["metadata"]["generation"]) == (201, 1)


def test_a_dry_run_create_keeps_the_resource_version_it_was_sent(bare_cluster: Any) -> None:
    """A dry run's storage copies the object without the version check (kube-apiserver v1.37)."""
    body = {"metadata": {"name": "dry", "resourceVersion": "5"}}
    path = "/api/v1/namespaces/default/configmaps"
    code, status, _ = _post(bare_cluster, path, body, "?dryRun=All")
    assert (code, status["metadata"]["resourceVersion"]) == (201, "5")


def test_an_invalid_custom_resource_with_a_resource_version_is_a_422(bare_cluster: Any) -> None:
    """The storage's check comes after validation, and a create that carries no name has
    that cause listed with the schema's."""
    body = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"resourceVersion": "5", "labels": {"framework": "pytorch"}},
        "spec": {"replicaSpecs": {"Master": {"replicas": "one"}}},
    }
    code, status, _ = _post(bare_cluster, ACJOBS, body)
    assert (code, status["reason"]) == (422, "Invalid")
    assert [c["field"] for c in status["details"]["causes"]] == [
        "metadata.name",
        "spec.replicaSpecs.Master.replicas",
    ]


@pytest.mark.parametrize(
    ("labels", "word"), [("a=b", "string"), (["a"], "array"), ({"a": 1}, "number")]
)
def test_labels_that_are_not_a_string_map_are_a_decode_error(
    bare_cluster: Any, labels: Any, word: str
) -> None:
    body = {"metadata": {"name": "lbl", "labels": labels}, "data": {}}
    code, status, _ = _post(bare_cluster, "/api/v1/namespaces/default/configmaps", body)
    assert code == 400
    assert status["reason"] == "BadRequest"
    assert (
        f"cannot unmarshal {word} into Go struct field ObjectMeta.metadata.labels"
        in (status["message"])
    )


def test_a_non_latin1_unknown_field_is_warned_about_at_once(bare_cluster: Any) -> None:
    """The Warning header carries the field name as UTF-8 bytes, as Go writes it."""
    body = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "warn"},
        "spec": {"replicaSpecs": {}, "名前": 1},
    }
    path = "/apis/mindxdl.gitee.com/v1/namespaces/default/ascendjobs"
    code, obj, headers = _post(bare_cluster, path, body, "?fieldValidation=Warn")
    assert code == 201, obj
    warning = headers.get("Warning") or ""
    assert "名前".encode().decode("latin-1") in warning


@pytest.mark.parametrize(
    ("raw", "tail"),
    [
        (b'{"a":1', 'unexpected end of JSON input ({"a":1)'),
        (
            b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"',
            'unexpected end of JSON input ({"apiVersion": "v1", "kind": " ...)',
        ),
        (b"", "unexpected end of JSON input (<empty>)"),
        # JSON has no NaN or Infinity; Python's decoder would take them, Go's does not.
        (
            b'{"kind":"ConfigMap","data":NaN}',
            "invalid character 'N' looking for beginning of value "
            '({"kind":"ConfigMap","data":NaN ...)',
        ),
        (
            b'{"kind":"ConfigMap","a":Infinity}',
            "invalid character 'I' looking for beginning of value "
            '({"kind":"ConfigMap","a":Infini ...)',
        ),
        (
            b'{"kind":"ConfigMap","a":-Infinity}',
            'invalid character \'I\' in numeric literal ({"kind":"ConfigMap","a":-Infin ...)',
        ),
        # Go's scanner stops at 10,000 levels, before any field is decoded (v1.37 answers this
        # for a pod or an AscendJob too); the local cluster itself decodes deeper documents.
        (
            b'{"kind":"ConfigMap","x":' + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"}",
            'invalid character \'{\' exceeded max depth ({"kind":"ConfigMap","x":{"a":{ ...)',
        ),
        (
            b'{"kind":"ConfigMap","x":' + b"[" * 10_000 + b"1" + b"]" * 10_000 + b"}",
            'invalid character \'[\' exceeded max depth ({"kind":"ConfigMap","x":[[[[[[ ...)',
        ),
    ],
)
def test_unparsable_bodies_are_unrecognized_objects(
    bare_cluster: Any, raw: bytes, tail: str
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", bare_cluster.port, timeout=5)
    try:
        conn.request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            raw,
            {"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        code, status = resp.status, json.loads(resp.read())
    finally:
        conn.close()
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        f"version/kind; json parse error: {tail}"
    )


ACJOBS = "/apis/mindxdl.gitee.com/v1/namespaces/default/ascendjobs"


def _acjob(name: str, **top: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "ascend", "image": "busybox:1.36"}]}}
    master = {"replicas": 1, "restartPolicy": "Never", "template": template}
    body: dict[str, Any] = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": name, "labels": {"framework": "pytorch"}},
        "spec": {"replicaSpecs": {"Master": master}},
    }
    return {**body, **top}


def _send(cluster: Any, path: str, raw: bytes) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=5)
    try:
        conn.request("POST", path, raw, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("top", "message"),
    [
        ({"apiVersion": {"a": 1}}, "the object provided is unrecognized (must be of type "
         "AscendJob): couldn't get version/kind; json parse error: json: cannot unmarshal "
         'object into Go struct field .apiVersion of type string ({"apiVersion": {"a": 1}, '
         '"kind ...)'),
        ({"apiVersion": None}, 'AscendJob in version "" cannot be handled as a AscendJob: '
         ".apiVersion accessor error: <nil> is of the type <nil>, expected string"),
        ({"apiVersion": "mindxdl.gitee.com/v2"}, "the API version in the data "
         "(mindxdl.gitee.com/v2) does not match the expected API version (mindxdl.gitee.com/v1)"),
        ({"metadata": {"name": "e", "creationTimestamp": "yesterday"}}, 'AscendJob in version '
         '"v1" cannot be handled as a AscendJob: parsing time "yesterday" as '
         '"2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
    ],
)  # fmt: skip
def test_a_custom_resource_envelope_is_decoded_as_kube_apiserver_does(
    bare_cluster: Any, top: dict[str, Any], message: str
) -> None:
    """These answered 500 (a Python exception) or were stored (make fuzz, seed 23)."""
    code, status = _send(bare_cluster, ACJOBS, json.dumps(_acjob("e", **top)).encode())
    assert (code, status["reason"], status["message"]) == (400, "BadRequest", message)


def test_a_custom_resource_without_a_kind_is_quoted_whole(bare_cluster: Any) -> None:
    body = _acjob("nokind")
    del body["kind"]
    raw = json.dumps(body).encode()
    code, status = _send(bare_cluster, ACJOBS, raw)
    assert code == 400
    assert status["message"] == (
        "the object provided is unrecognized (must be of type AscendJob): Object 'Kind' is "
        f"missing in '{raw.decode()}' ({raw.decode()[:30]} ...)"
    )


def test_a_custom_resource_of_another_kind_is_invalid(bare_cluster: Any) -> None:
    code, status = _send(bare_cluster, ACJOBS, json.dumps(_acjob("k", kind="Pod")).encode())
    assert (code, status["reason"]) == (422, "Invalid")
    assert (
        status["message"]
        == 'Pod.mindxdl.gitee.com "k" is invalid: kind: Invalid value: "Pod": must be AscendJob'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "Pod": must be AscendJob',
            "field": "kind",
        }
    ]


def test_bytes_that_are_no_utf8_are_stored_as_the_replacement_character(bare_cluster: Any) -> None:
    raw = json.dumps(_acjob("u8", metadata={"name": "u8", "annotations": {"a": "XX"}})).encode()
    code, stored = _send(bare_cluster, ACJOBS, raw.replace(b"XX", b"\xff\xfe"))
    assert code == 201, stored
    assert stored["metadata"]["annotations"] == {"a": "\ufffd\ufffd"}


def test_an_integral_float_is_an_integer_and_comes_back_as_one(bare_cluster: Any) -> None:
    body = _acjob("f")
    body["spec"]["replicaSpecs"]["Master"]["replicas"] = 1.0
    code, stored = _send(bare_cluster, ACJOBS, json.dumps(body).encode())
    assert code == 201, stored
    replicas = stored["spec"]["replicaSpecs"]["Master"]["replicas"]
    assert replicas == 1 and isinstance(replicas, int)


def test_a_body_nested_to_gos_limit_is_decoded(bare_cluster: Any) -> None:
    """10,000 levels in all (the object itself is one) is what Go's scanner still takes: the
    ConfigMap is created."""
    raw = b'{"kind":"ConfigMap","metadata":{"name":"deepest"},"x":'
    raw += b'{"a":' * 9_999 + b"1" + b"}" * 9_999 + b"}"
    code, obj = _send(bare_cluster, "/api/v1/namespaces/default/configmaps", raw)
    assert code == 201, obj
    assert obj["metadata"]["name"] == "deepest"
    assert "x" not in obj  # a ConfigMap has no field x: dropped, as the real server does


def test_a_bad_label_is_invalid_beside_the_schemas_causes(bare_cluster: Any) -> None:
    """kube-apiserver v1.37's answer, word for word: ObjectMeta's causes come first."""
    body = _acjob("bad-label")
    body["metadata"]["labels"] = {"framework": "pytorch-"}
    body["spec"]["replicaSpecs"]["Master"]["replicas"] = "x"
    code, status = _send(bare_cluster, ACJOBS, json.dumps(body).encode())
    assert (code, status["reason"]) == (422, "Invalid")
    value_shape = (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )
    assert status["message"] == (
        'AscendJob.mindxdl.gitee.com "bad-label" is invalid: [metadata.labels: Invalid value: '
        f'"pytorch-": {value_shape}, spec.replicaSpecs.Master.replicas: Invalid value: '
        '"string": spec.replicaSpecs.Master.replicas in body must be of type integer: "string"]'
    )
    assert [c["field"] for c in status["details"]["causes"]] == [
        "metadata.labels",
        "spec.replicaSpecs.Master.replicas",
    ]


def test_a_bad_label_on_an_update_is_invalid(
    bare_cluster: Any,
) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    code, cm, _ = _post(bare_cluster, path, {"metadata": {"name": "relabel"}, "data": {}})
    assert code == 201, cm
    cm["metadata"]["labels"] = {"a": "-"}
    conn = http.client.HTTPConnection("127.0.0.1", bare_cluster.port, timeout=5)
    try:
        conn.request("PUT", f"{path}/relabel", json.dumps(cm), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        code, status = resp.status, json.loads(resp.read())
    finally:
        conn.close()
    assert (code, status["details"]["causes"][0]["field"]) == (422, "metadata.labels"), status


TYPE_META = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


@pytest.mark.parametrize(
    ("raw", "tail"),
    [
        (b"null", "Object 'Kind' is missing in 'null' (6e756c6c)"),
        (b"[1, 2]", f"couldn't get version/kind; json parse error: json: cannot unmarshal array "
                    f"into Go value of type {TYPE_META} (5b312c20325d)"),
        (b'"x"', f"couldn't get version/kind; json parse error: json: cannot unmarshal string "
                 f"into Go value of type {TYPE_META} (227822)"),
        (b"true", f"couldn't get version/kind; json parse error: json: cannot unmarshal bool "
                  f"into Go value of type {TYPE_META} (74727565)"),
        # Go's decoder takes no byte-order mark; the body is summarized in hex, 30 bytes.
        (b'\xef\xbb\xbf{"apiVersion": "mindxdl.gitee.com/v1", "kind": "AscendJob"}',
         "couldn't get version/kind; json parse error: invalid character '\u00ef' looking for "
         "beginning of value (efbbbf7b2261706956657273696f6e223a20226d696e6478646c2e676974 ...)"),
    ],
)  # fmt: skip
def test_a_body_that_is_no_json_object_is_unrecognized(
    bare_cluster: Any, raw: bytes, tail: str
) -> None:
    """kube-apiserver v1.37's words, read from its answers to the same bytes."""
    code, status = _send(bare_cluster, ACJOBS, raw)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        f"the object provided is unrecognized (must be of type AscendJob): {tail}"
    )


def test_null_is_an_empty_object_to_a_built_in_kind(bare_cluster: Any) -> None:
    code, status = _send(bare_cluster, "/api/v1/namespaces/default/configmaps", b"null")
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    )


def test_a_built_in_kinds_bad_name_is_listed_with_its_other_causes(bare_cluster: Any) -> None:
    """kube-apiserver v1.37 validates the whole object: the name's cause comes first, then the
    rest of the metadata's, then the kind's own (fidelity: bad-name-beside-other-causes-422)."""
    body = {"metadata": {"name": "Bad_Name", "labels": {"a": "-"}}, "data": {"bad key!": "v"}}
    code, status, _ = _post(bare_cluster, "/api/v1/namespaces/default/configmaps", body)
    assert (code, status["reason"]) == (422, "Invalid")
    fields = [cause["field"] for cause in status["details"]["causes"]]
    assert fields == ["metadata.name", "metadata.labels", "data[bad key!]"], status
    code, status, _ = _post(bare_cluster, "/api/v1/namespaces/missing/configmaps", body)
    assert (code, status["reason"]) == (404, "NotFound")  # the namespace first
