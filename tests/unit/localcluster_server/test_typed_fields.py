"""The decode errors (400) kube-apiserver answers for a pod's container string lists."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster.typed_fields import (
    go_numbers,
    object_meta_error,
    pod_unmarshal_error,
    rfc3339_error,
)


def _pod(**container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", **container}]}}


@pytest.mark.parametrize(
    ("pod", "error"),
    [
        (_pod(command=["sh", "-c"], args=["x"]), None),
        (_pod(command=None), None),
        (_pod(command=5), "cannot unmarshal number into Go struct field "
         "Container.spec.containers.command of type []string"),
        (_pod(args="x"), "cannot unmarshal string into Go struct field "
         "Container.spec.containers.args of type []string"),
        (_pod(args=["x", {}]), "cannot unmarshal object into Go struct field "
         "Container.spec.containers.args of type string"),
        ({"spec": {"initContainers": [{"command": True}], "containers": []}},
         "cannot unmarshal bool into Go struct field "
         "Container.spec.initContainers.command of type []string"),
        ({"spec": "odd"}, None),
    ],
)  # fmt: skip
def test_pod_unmarshal_error(pod: dict[str, Any], error: str | None) -> None:
    found = pod_unmarshal_error(pod)
    assert found == (None if error is None else f"json: {error}")


@pytest.mark.parametrize(
    ("meta", "prefix", "error"),
    [
        ({"name": "j", "labels": {"a": "b"}, "generation": 2.0, "uid": None}, "ObjectMeta.", None),
        ({"name": ["j"]}, "ObjectMeta.", "cannot unmarshal array into Go struct field "
         "ObjectMeta.name of type string"),
        ({"name": 5}, "ObjectMeta.metadata.", "cannot unmarshal number into Go struct field "
         "ObjectMeta.metadata.name of type string"),
        ({"uid": 5}, "ObjectMeta.", "cannot unmarshal number into Go struct field "
         "ObjectMeta.uid of type types.UID"),
        ({"generation": 1.5}, "ObjectMeta.", "cannot unmarshal number 1.5 into Go struct field "
         "ObjectMeta.generation of type int64"),
        ({"generation": True}, "ObjectMeta.", "cannot unmarshal bool into Go struct field "
         "ObjectMeta.generation of type int64"),
        ({"creationTimestamp": 5}, "ObjectMeta.", "cannot unmarshal number into Go struct "
         "field ObjectMeta.creationTimestamp of type string"),
        ({"finalizers": "x"}, "ObjectMeta.", "cannot unmarshal string into Go struct field "
         "ObjectMeta.finalizers of type []string"),
        ({"finalizers": [1]}, "ObjectMeta.", "cannot unmarshal number into Go struct field "
         "ObjectMeta.finalizers of type string"),
        ({"ownerReferences": ["x"]}, "ObjectMeta.", "cannot unmarshal string into Go struct "
         "field ObjectMeta.ownerReferences of type v1.OwnerReference"),
        ({"ownerReferences": [{"uid": 5}]}, "ObjectMeta.", "cannot unmarshal number into Go "
         "struct field OwnerReference.ownerReferences.uid of type types.UID"),
        ({"labels": "a=b"}, "ObjectMeta.", "cannot unmarshal string into Go struct field "
         "ObjectMeta.labels of type map[string]string"),
        ({"annotations": {"a": 1}}, "ObjectMeta.metadata.", "cannot unmarshal number into Go "
         "struct field ObjectMeta.metadata.annotations of type string"),
    ],
)  # fmt: skip
def test_object_meta_error(meta: dict[str, Any], prefix: str, error: str | None) -> None:
    assert object_meta_error(meta, prefix) == (None if error is None else f"json: {error}")


LAYOUT = '"2006-01-02T15:04:05Z07:00"'


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("2020-01-01T00:00:00Z", None),
        ("2020-01-01T00:00:00.5+01:00", None),
        ("yesterday", f'parsing time "yesterday" as {LAYOUT}: cannot parse "yesterday" as "2006"'),
        ("", f'parsing time "" as {LAYOUT}: cannot parse "" as "2006"'),
        ("2020-01", f'parsing time "2020-01" as {LAYOUT}: cannot parse "" as "-"'),
        ("2020-01-01T00:00:00", f'parsing time "2020-01-01T00:00:00" as {LAYOUT}: cannot parse '
         '"" as "Z07:00"'),
        ("2020-13-01T00:00:00Z", 'parsing time "2020-13-01T00:00:00Z": month out of range'),
    ],
)  # fmt: skip
def test_rfc3339_error_words_it_as_go(value: str, error: str | None) -> None:
    assert rfc3339_error(value) == error


def test_go_numbers_turns_integral_floats_into_ints_in_place() -> None:
    body = {"a": 1.0, "b": [0.0, 2.5, {"c": 3e3}], "d": "1.0", "e": True}
    assert go_numbers(body) is body
    assert body == {"a": 1, "b": [0, 2.5, {"c": 3000}], "d": "1.0", "e": True}
    assert [type(v) for v in (body["a"], body["b"][0], body["b"][2]["c"])] == [int, int, int]
    assert go_numbers(1e300) == 1e300  # too large for an int64: kept


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"nodeSelector": "a"}, "cannot unmarshal string into Go struct field "
         "PodSpec.spec.nodeSelector of type map[string]string"),
        ({"nodeSelector": {"a": 1}}, "cannot unmarshal number into Go struct field "
         "PodSpec.spec.nodeSelector of type string"),
        ({"containers": [{"image": {}}]}, "cannot unmarshal object into Go struct field "
         "Container.spec.containers.image of type string"),
        ({"containers": [{"volumeMounts": "v"}]}, "cannot unmarshal string into Go struct "
         "field Container.spec.containers.volumeMounts of type []v1.VolumeMount"),
        ({"containers": [{"volumeMounts": ["v"]}]}, "cannot unmarshal string into Go struct "
         "field Container.spec.containers.volumeMounts of type v1.VolumeMount"),
        ({"containers": [{"volumeMounts": [{"name": 5}]}]}, "cannot unmarshal number into Go "
         "struct field VolumeMount.spec.containers.volumeMounts.name of type string"),
        ({"nodeSelector": {"a": "b"}, "containers": [{"image": "i", "volumeMounts": [{}]}]}, None),
        # kube-apiserver v1.37's words (make fuzz, seed 31), and the first in the body's order.
        ({"schedulerName": 1}, "cannot unmarshal number into Go struct field "
         "PodSpec.spec.schedulerName of type string"),
        ({"restartPolicy": 1}, "cannot unmarshal number into Go struct field "
         "PodSpec.spec.restartPolicy of type v1.RestartPolicy"),
        ({"hostNetwork": "true"}, "cannot unmarshal string into Go struct field "
         "PodSpec.spec.hostNetwork of type bool"),
        ({"terminationGracePeriodSeconds": 30.0, "activeDeadlineSeconds": 5}, None),
        ({"volumes": {"name": "a"}}, "cannot unmarshal object into Go struct field "
         "PodSpec.spec.volumes of type []v1.Volume"),
        ({"volumes": [1]}, "cannot unmarshal number into Go struct field PodSpec.spec.volumes "
         "of type v1.Volume"),
        ({"volumes": [{"name": 1}]}, "cannot unmarshal number into Go struct field "
         "Volume.spec.volumes.name of type string"),
        ({"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "nfs": 1}]}, "cannot "
         "unmarshal number into Go struct field Volume.spec.volumes.VolumeSource.nfs of type "
         "v1.NFSVolumeSource"),
        ({"volumes": [{"name": "a", "configMap": {"name": 5}}]}, "cannot unmarshal number into "
         "Go struct field ConfigMapVolumeSource.spec.volumes.VolumeSource.configMap."
         "LocalObjectReference.name of type string"),
        ({"containers": [{"volumeMounts": [{"name": "a", "mountPath": 5}]}]}, "cannot unmarshal "
         "number into Go struct field VolumeMount.spec.containers.volumeMounts.mountPath of type "
         "string"),
        ({"schedulerName": 1, "nodeSelector": "a"}, "cannot unmarshal number into Go struct "
         "field PodSpec.spec.schedulerName of type string"),
    ],
)  # fmt: skip
def test_pod_unmarshal_error_of_other_fields(spec: dict[str, Any], error: str | None) -> None:
    assert pod_unmarshal_error({"spec": spec}) == (None if error is None else f"json: {error}")
