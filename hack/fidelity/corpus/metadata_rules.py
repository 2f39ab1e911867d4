"""Labels, annotation keys, and a bad value's quoting in a 422: the local cluster stored a job
labelled `framework: pytorch-` and quoted non-ASCII values as JSON does, where kube-apiserver
refuses the label and quotes as Go's `%q` (found by `make fuzz`, seed 31, 2026-12-07)."""

from __future__ import annotations

from typing import Any

from hack.fidelity.corpus.objects import acjob, configmap, pod
from hack.fidelity.steps import Step, acj, case, post


def _job(labels: dict[str, str] | None = None, **master: Any) -> dict[str, Any]:
    body = acjob("j", **({"labels": labels} if labels is not None else {}))
    body["spec"]["replicaSpecs"]["Master"].update(master)
    return body


def _acjob_post(body: dict[str, Any]) -> Step:
    return Step("POST", acj("ascendjobs"), body)


def _cm(name: str = "c", **meta: Any) -> Step:
    return post("configmaps", configmap(name, **meta))


BAD_CONTAINER = {"containers": [{"name": "C", "image": "busybox"}]}
CONTROL = "nul\x00a\u00a0b\u2028😀\x7f"


CASES = [
    case("labels-value-trailing-dash-422", _acjob_post(_job({"framework": "pytorch-"}))),
    case("labels-value-empty-accepted", _acjob_post(_job({"framework": "pytorch", "x": ""}))),
    case("labels-value-emoji-bytes-422", _cm(labels={"a": "😀" * 20})),
    case("labels-key-two-slashes-422", _cm(labels={"a/b/c": "x"})),
    case("labels-key-empty-name-422", _cm(labels={"x/": "y"})),
    case("labels-key-long-prefix-422", _cm(labels={"x" * 254 + "/n": "y"})),
    case("labels-same-cause-once-422", _cm(labels={"b": "-", "a": "-"})),
    case("annotations-key-space-422", _cm(annotations={"Bad Key": "v"})),
    case("annotations-key-upper-accepted", _cm(annotations={"UPPER.com/Key": "v"})),
    case("labels-with-a-bad-name-422", _cm("UPPER", labels={"a": "-"})),
    case("labels-with-schema-causes-422", _acjob_post(_job({"framework": "x-"}, replicas="x"))),
    case(
        "labels-with-pod-causes-422",
        post("pods", {**pod("p", labels={"a": "-"}), "spec": BAD_CONTAINER}),
    ),
    # A built-in kind's bad or missing name is one cause among its others, listed first; a
    # missing namespace is found before any of them (admission before validation).
    case(
        "bad-name-beside-other-causes-422",
        post("configmaps", {**configmap("", {"bad key!": "v"}), "metadata": {}}),
        post("configmaps", configmap("Bad_Name", {"bad key!": "v"}, labels={"a": "-"})),
        post("configmaps", configmap("", {"k": "v"}, generateName="Bad_")),
        post("pods", {**pod("Bad_Pod"), "spec": BAD_CONTAINER}),
        Step("POST", "/api/v1/namespaces/missing-{run}/configmaps", configmap("Bad_Name")),
    ),
    case("quoted-unsupported-katakana-422", _acjob_post(_job(restartPolicy="マスター"))),
    case("quoted-unsupported-control-422", _acjob_post(_job(restartPolicy=CONTROL))),
]  # fmt: skip
