"""The decode errors (400) kube-apiserver answers for a pod's container string lists."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster.typed_fields import (
    go_numbers,
    object_meta_error,
    pod_unmarshal_error,
    time_field_error,
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
    typed = prefix == "ObjectMeta.metadata."  # a built-in kind's body, decoded from its text
    got = object_meta_error(meta, prefix, typed=typed)
    assert got == (None if error is None else f"json: {error}")


# kube-apiserver v1.37's answers: a built-in kind decodes ObjectMeta's int64s from the body's
# text, a custom resource from its decoded map (numbers past int64 are float64s there).
@pytest.mark.parametrize(
    ("value", "typed", "shown"),
    [
        (2**63, True, "9223372036854775808"),
        (2**63, False, "9223372036854776000"),
        (-(2**63) - 1, False, "-9223372036854776000"),
        (2**64, False, "18446744073709552000"),
        (1e19, False, "10000000000000000000"),
        (1e18, True, "1e18"),
        (1.0, True, "1.0"),
        (2.5, False, "2.5"),
        (1e18, False, None),
        (1.0, False, None),
        (2**63 - 1, True, None),
    ],
)
def test_an_object_meta_int64_is_decoded_as_go_decodes_it(
    value: Any, typed: bool, shown: str | None
) -> None:
    prefix = "ObjectMeta.metadata." if typed else "ObjectMeta."
    got = object_meta_error({"generation": value}, prefix, typed=typed)
    if shown is None:
        assert got is None
    else:
        assert got == (
            f"json: cannot unmarshal number {shown} into Go struct field {prefix}generation "
            "of type int64"
        )


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
def test_a_time_field_error_words_it_as_go(value: str, error: str | None) -> None:
    assert time_field_error(value, "ObjectMeta.metadata.creationTimestamp") == error


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
        # ports and env, and a container's fields in the body's order (make fuzz, seed 43)
        ({"containers": [{"ports": [{"name": {}}]}]}, "cannot unmarshal object into Go struct "
         "field ContainerPort.spec.containers.ports.name of type string"),
        ({"containers": [{"ports": [{"protocol": 5}]}]}, "cannot unmarshal number into Go "
         "struct field ContainerPort.spec.containers.ports.protocol of type v1.Protocol"),
        ({"containers": [{"env": [{"name": "A", "valueFrom": 1}]}]}, "cannot unmarshal number "
         "into Go struct field EnvVar.spec.containers.env.valueFrom of type v1.EnvVarSource"),
        ({"containers": [{"env": [{"name": 1}], "image": 5}]}, "cannot unmarshal number into Go "
         "struct field EnvVar.spec.containers.env.name of type string"),
        ({"containers": [{"ports": [{"containerPort": 80, "protocol": "TCP"}],
                          "env": [{"name": "A", "valueFrom": {"fieldRef": {}}}]}]}, None),
        # kube-apiserver v1.37's words (make fuzz, seed 31), and the first in the body's order.
        ({"schedulerName": 1}, "cannot unmarshal number into Go struct field "
         "PodSpec.spec.schedulerName of type string"),
        ({"restartPolicy": 1}, "cannot unmarshal number into Go struct field "
         "PodSpec.spec.restartPolicy of type v1.RestartPolicy"),
        ({"hostNetwork": "true"}, "cannot unmarshal string into Go struct field "
         "PodSpec.spec.hostNetwork of type bool"),
        ({"terminationGracePeriodSeconds": 30, "activeDeadlineSeconds": 5}, None),
        # Go reads an int64 from the text: 30.0 is no int64 to it (kube-apiserver v1.37)
        ({"terminationGracePeriodSeconds": 30.0}, "cannot unmarshal number 30.0 into Go "
         "struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"),
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


META = "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{} of type {}"


@pytest.mark.parametrize(
    ("meta", "error"),
    [
        ({"name": 5, "creationTimestamp": "bad"},
         f'parsing time "bad" as {LAYOUT}: cannot parse "bad" as "2006"'),
        ({"generation": "x", "creationTimestamp": 7},
         META.format("number", "creationTimestamp", "string")),
        ({"deletionTimestamp": "2020-02-30T00:00:00Z", "creationTimestamp": "bad"},
         'parsing time "2020-02-30T00:00:00Z": day out of range'),
        ({"name": 5, "generation": "x"}, META.format("number", "name", "string")),
    ],
)  # fmt: skip
def test_a_time_that_fails_to_decode_wins_over_a_type_error_noted_before(
    meta: dict[str, Any], error: str
) -> None:
    """kube-apiserver v1.37.2's answers (fidelity case decode-time-error-wins-400)."""
    assert object_meta_error(meta, "ObjectMeta.metadata.") == error


@pytest.mark.parametrize(
    ("volume", "struct", "field", "shown", "go_type"),
    [
        ({"hostPath": {"path": -1}},
         "HostPathVolumeSource", "hostPath.path", "number", "string"),
        ({"hostPath": {"path": "/x", "type": 5}},
         "HostPathVolumeSource", "hostPath.type", "number", "v1.HostPathType"),
        ({"nfs": {"server": "s", "readOnly": "yes"}},
         "NFSVolumeSource", "nfs.readOnly", "string", "bool"),
        ({"emptyDir": {"medium": 5}},
         "EmptyDirVolumeSource", "emptyDir.medium", "number", "v1.StorageMedium"),
        ({"secret": {"secretName": 5}},
         "SecretVolumeSource", "secret.secretName", "number", "string"),
        ({"configMap": {"name": 5}},
         "ConfigMapVolumeSource", "configMap.LocalObjectReference.name", "number", "string"),
        ({"configMap": {"name": "c", "defaultMode": "x"}},
         "ConfigMapVolumeSource", "configMap.defaultMode", "string", "int32"),
    ],
)  # fmt: skip
def test_a_volume_sources_scalars_are_go_types(
    volume: dict[str, Any], struct: str, field: str, shown: str, go_type: str
) -> None:
    """kube-apiserver v1.37.2's answers (fidelity case bad-pod-ports-selector-and-volumes)."""
    pod = {"spec": {"volumes": [{"name": "v", **volume}]}}
    where = f"{struct}.spec.volumes.VolumeSource.{field}"
    error = f"json: cannot unmarshal {shown} into Go struct field {where} of type {go_type}"
    assert pod_unmarshal_error(pod) == error
