"""AscendJob bodies the decoder refuses or tolerates: apiVersion and kind, ObjectMeta's typed
fields, integral numbers for integers, invalid UTF-8. Found by `make fuzz`, where the local
cluster and kube-apiserver disagreed on 19 of 300 status codes (seed 23, 2026-12-07)."""

from __future__ import annotations

import json
from typing import Any

from hack.fidelity.corpus.objects import acjob, configmap, pod, service
from hack.fidelity.steps import Step, acj, case, ns_path

PATH = acj("ascendjobs")


def _post(body: Any) -> Step:
    return Step("POST", PATH, body)


def _with(**top: Any) -> dict[str, Any]:
    return {**acjob("j"), **top}


def _meta(**fields: Any) -> dict[str, Any]:
    body = acjob("j")
    body["metadata"] = {**body["metadata"], **fields}
    return body


def _named(body: dict[str, Any], name: Any) -> dict[str, Any]:
    """`body` with `metadata.name` set to `name`, in the name's place (first)."""
    body["metadata"]["name"] = name
    return body


def _without(key: str) -> dict[str, Any]:
    body = acjob("j")
    del body[key]
    return body


def _numbers(name: str, deadline: str, replicas: str = "1") -> Step:
    """A job whose activeDeadlineSeconds (int64) and Master replicas (int32) are these JSON
    number literals, sent as written."""
    body = json.dumps(acjob(name, replicas=0))
    body = body.replace('"replicas": 0', f'"replicas": {replicas}')
    body = body.replace(
        '"spec": {', f'"spec": {{"runPolicy": {{"activeDeadlineSeconds": {deadline}}}, ', 1
    )
    return Step("POST", PATH, raw=body.encode())


def _run_policy(name: str, **policy: Any) -> Step:
    body = acjob(name)
    body["spec"]["runPolicy"] = policy
    return _post(body)


def _bad_everywhere(name: str, **meta: Any) -> Step:
    """Bad metadata and a bad spec in one body: one 422 lists both."""
    body = acjob(name)
    body["metadata"].update(meta)
    body["spec"]["runPolicy"] = {"backoffLimit": "y"}
    return _post(body)


def _generation(path: str, body: dict[str, Any], literal: str) -> Step:
    """`body` with `metadata.generation` set to this JSON number literal, sent as written."""
    raw = json.dumps(body).replace('"metadata": {', f'"metadata": {{"generation": {literal}, ', 1)
    return Step("POST", path, raw=raw.encode())


CASES = [
    # Every cause of a bad value, as kube-openapi finds them (make fuzz, seed 31): the enum is
    # checked after a failed type check, a boolean or object in a field with a format is named
    # by the format, an object in a string field is pruned before its enum cause, -0 stays -0,
    # and the metadata's causes come with the schema's. Several causes come in random order
    # on the real server; the suite compares them as a set (normalize.in_cause_order).
    case(
        "acjob-every-cause-of-a-bad-value-422",
        _run_policy("c1", cleanPodPolicy=5),
        _run_policy("c2", cleanPodPolicy={"a": [1, "b"]}),
        _run_policy("c3", cleanPodPolicy=["a", "b"]),
        _post(acjob("c4", replicas=True)),
        _post(acjob("c5", replicas={"x": 1})),
        _run_policy("c6", activeDeadlineSeconds={}),
        _run_policy("c7", activeDeadlineSeconds=False),
        _numbers("c8", "-0.0"),
        _run_policy("c9", backoffLimit="y", ttlSecondsAfterFinished="t", cleanPodPolicy=5),
        _bad_everywhere("BAD_NAME"),
        _bad_everywhere("", generateName="Bad_"),
        _bad_everywhere("c10", labels={"framework": "pytorch", "x": "-bad-"}),
        Step("POST", PATH, {**acjob("c11"), "spec": {"runPolicy": {"backoffLimit": "y"}}}),
        # (make fuzz, seed 37) no name at all, and a resourceVersion the storage would refuse
        _bad_everywhere("", resourceVersion="5"),
        _bad_everywhere("c12", resourceVersion="5"),
    ),
    # Numbers as Go's decoder and kube-openapi see them (make fuzz, seed 31): an integral float
    # is an integer below 2^53 only, an integer literal beyond int64 is a float64, and a format
    # is a range with a cause of its own.
    case(
        "acjob-number-forms",
        _numbers("n1", "1e+3", "2e9"),
        _numbers("n2", "1e+308"),
        _numbers("n3", "9007199254740992.0"),
        _numbers("n4", "9223372036854775808"),
        _numbers("n5", "-1e+308"),
        _numbers("n6", "3", "2147483648"),
        _numbers("n7", "3", "1.5"),
    ),
    case(
        "acjob-not-an-object-400",
        Step("POST", PATH, raw=b"null"),
        Step("POST", PATH, raw=b"[1, 2]"),
        Step("POST", PATH, raw=b"true"),
        Step("POST", PATH, raw=b"\xef\xbb\xbf" + json.dumps(acjob("bom")).encode()),
    ),
    case("acjob-api-version-object-400", _post(_with(apiVersion={"a": 1}))),
    case("acjob-api-version-null-400", _post(_with(apiVersion=None))),
    case("acjob-api-version-empty-400", _post(_with(apiVersion=""))),
    case("acjob-api-version-other-version-400", _post(_with(apiVersion="mindxdl.gitee.com/v2"))),
    case("acjob-kind-empty-400", _post(_with(kind=""))),
    case("acjob-kind-missing-400", _post(_without("kind"))),
    case("acjob-kind-other-422", _post(_with(kind="Pod"))),
    case("acjob-name-array-400", _post(_meta(name=["j"]))),
    case("acjob-resource-version-number-400", _post(_meta(resourceVersion=5))),
    case("acjob-creation-timestamp-number-400", _post(_meta(creationTimestamp=5))),
    case("acjob-creation-timestamp-text-400", _post(_meta(creationTimestamp="yesterday"))),
    case("acjob-owner-references-string-400", _post(_meta(ownerReferences="x"))),
    case("acjob-name-leading-dash-422", _post(_meta(name="-leading"))),
    case(
        "acjob-integral-float-is-an-integer",
        Step("POST", PATH, acjob("j", replicas=-0.0), pick=("spec.replicaSpecs",)),
        Step("POST", PATH, acjob("k", replicas=1.0), pick=("spec.replicaSpecs",)),
    ),
    case(
        "acjob-invalid-utf8-tolerated",
        Step(
            "POST",
            PATH,
            raw=b'{"apiVersion": "mindxdl.gitee.com/v1", "kind": "AscendJob", "metadata": '
            b'{"name": "j", "annotations": {"a": "\\u00e9 \xff\xfe"}}, "spec": '
            b'{"replicaSpecs": {"Master": {"replicas": 1}}}}',
            pick=("metadata.annotations",),
        ),
    ),
    case("acjob-generation-fraction-400", _post(_meta(generation=1.5))),
    # ObjectMeta's int64s: a built-in kind's are read from the body's text (no fraction or
    # exponent, even integral), a custom resource's from its decoded map, where a number
    # past int64 is a float64 and is named as Go writes it (docs/fuzz.md, seed 37).
    case(
        "metadata-int64-forms",
        *[
            _generation(PATH, acjob(f"g{i}"), literal)
            for i, literal in enumerate(
                (
                    "9223372036854775807",
                    "9223372036854775808",
                    "1e19",
                    "1e18",
                    "1.0",
                    "-9223372036854775809",
                )
            )
        ],
        *[
            _generation(ns_path("configmaps"), configmap(f"g{i}"), literal)
            for i, literal in enumerate(
                ("9223372036854775807", "9223372036854775808", "1e18", "1.0")
            )
        ],
        # a kind without generation semantics keeps the one it was sent
        _generation(ns_path("services"), service("s"), "7"),
        _generation(ns_path("pods"), pod("p"), "7"),
    ),
    case("acjob-finalizers-number-400", _post(_meta(finalizers=[1]))),
    case("acjob-labels-string-400", _post(_meta(labels="a=b"))),
    case(
        "acjob-owner-reference-uid-number-400",
        _post(
            _meta(
                ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": 5}]
            )
        ),
    ),
    case("acjob-timestamp-month-400", _post(_meta(creationTimestamp="2020-13-01T00:00:00Z"))),
    case("acjob-timestamp-no-zone-400", _post(_meta(creationTimestamp="2020-01-01T00:00:00"))),
    # A time's own decoding error ends Go's decoding, and wins over a type error noted
    # before it (typed_fields.object_meta_errors), in a custom resource and a built-in kind.
    case(
        "decode-time-error-wins-400",
        _post(_meta(name="j1", generation="x", creationTimestamp="bad")),
        _post(_meta(name="j2", generation="x", creationTimestamp=5)),
        _post(_meta(name="j3", generation="x", deletionTimestamp="2020-02-30T00:00:00Z")),
        Step("POST", ns_path("configmaps"), _named(configmap("c1", creationTimestamp="bad"), 5)),
        Step("POST", ns_path("configmaps"), configmap("c2", generation="x", creationTimestamp=7)),
        Step("POST", ns_path("configmaps"), configmap("c3", generation="x", finalizers=[1])),
    ),
    # Found by `make fuzz --seed 53`: the body is decoded before its apiVersion is compared,
    # so a metadata decode error comes first, naming the body's own version.
    case(
        "acjob-metadata-error-before-version-400",
        _post(_with(apiVersion="\ud7ff\ue000", metadata={"name": "j", "annotations": {"a": True}})),
        _post(_with(apiVersion="x/v9", metadata={"name": "j", "annotations": {"a": True}})),
        _post(_with(apiVersion="mindxdl.gitee.com/v2", metadata={"name": "j", "labels": {"a": 5}})),
        _post(_with(apiVersion="weird", metadata=[1])),
        _post(_with(apiVersion="weird")),
    ),
    case("acjob-api-version-missing-400", _post(_without("apiVersion"))),
    case("acjob-kind-number-400", _post(_with(kind=5))),
]
