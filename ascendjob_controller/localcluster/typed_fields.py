"""Go's unmarshal errors for typed fields, as kube-apiserver's decoder words them (a 400).

kube-apiserver decodes a body into Go structs before it validates anything, so a field of the
wrong JSON type is a 400 BadRequest (`Pod in version "v1" cannot be handled as a Pod: json:
cannot unmarshal number into Go struct field Container.spec.containers.command of type
[]string`), not a 422. The local cluster stores JSON as it comes; this models the decode
errors clients run into: ObjectMeta's fields, and the pod fields hand-written templates get
wrong (the node selector, a container's image, command, args and volume mounts).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from ascendjob_controller.localcluster import gotime

#: A container's fields that are lists of strings in Go (`[]string`).
_STRING_LISTS = ("command", "args")


def json_type(value: Any) -> str:
    """The JSON type word Go's encoding/json uses in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def pod_unmarshal_error(pod: dict[str, Any]) -> str | None:
    """`json: cannot unmarshal ...` for the first pod field of the wrong type, in the body's
    order, among those a template gets wrong: the node selector, PodSpec's scalars,
    containers (image, string lists, mounts) and volumes."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return None
    for key, value in spec.items():
        if value is None:
            continue  # null leaves a Go field at its zero value
        found: str | None = None
        if key == "nodeSelector":
            found = _string_map_error(value, "PodSpec.spec.nodeSelector")
        elif key in ("initContainers", "containers"):
            for container in value if isinstance(value, list) else []:
                if isinstance(container, dict):
                    found = found or _container_error(container, f"Container.spec.{key}")
        elif key == "volumes":
            found = _volumes_error(value)
        elif key in _POD_SPEC_SCALARS:
            found = scalar_error(value, f"PodSpec.spec.{key}", _POD_SPEC_SCALARS[key])
        if found is not None:
            return found
    return None


#: PodSpec's scalar fields by Go type (the ones templates set).
_POD_SPEC_SCALARS = {
    "schedulerName": "string",
    "serviceAccountName": "string",
    "serviceAccount": "string",
    "nodeName": "string",
    "hostname": "string",
    "subdomain": "string",
    "priorityClassName": "string",
    "restartPolicy": "v1.RestartPolicy",
    "dnsPolicy": "v1.DNSPolicy",
    "hostNetwork": "bool",
    "hostPID": "bool",
    "hostIPC": "bool",
    "automountServiceAccountToken": "bool",
    "terminationGracePeriodSeconds": "int64",
    "activeDeadlineSeconds": "int64",
}
#: A volume's sources by Go type: each is an object.
_VOLUME_SOURCES = {
    "nfs": "v1.NFSVolumeSource",
    "emptyDir": "v1.EmptyDirVolumeSource",
    "configMap": "v1.ConfigMapVolumeSource",
    "secret": "v1.SecretVolumeSource",
    "hostPath": "v1.HostPathVolumeSource",
    "persistentVolumeClaim": "v1.PersistentVolumeClaimVolumeSource",
    "downwardAPI": "v1.DownwardAPIVolumeSource",
    "projected": "v1.ProjectedVolumeSource",
}


def scalar_error(value: Any, field: str, go_type: str) -> str | None:
    """A JSON value that is not of the Go scalar type of a built-in kind's field: strings
    (and string kinds), bools, int64s and int32s. Go decodes those from the body's text,
    where a number with a fraction or an exponent is no integer even when integral (`30.0`,
    `1e3`)."""
    if go_type == "bool":
        ok = isinstance(value, bool)
    elif go_type == "int64":
        ok = type(value) is int and _fits_int64(value)
    elif go_type == "int32":
        ok = type(value) is int and -(2**31) <= value < 2**31
    else:
        ok = isinstance(value, str)
    return None if ok else unmarshal_type_error(value, field, go_type)


def _decoded_int64_error(value: Any, field: str) -> str | None:
    """An int64 field of a custom resource's metadata, which Go decodes from the already
    decoded map: any number beyond int64 is a float64 there, and an integral one that fits
    is taken. A refused number is printed as Go writes that float64."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if number.is_integer() and _fits_int64(value):
            return None
        return unmarshal_type_error(value, field, "int64", number=go_float_text(number))
    return unmarshal_type_error(value, field, "int64")


def go_float_text(value: float) -> str:
    """A float64 as Go's encoding/json writes it: the shortest digits, in plain notation
    from 1e-6 up to 1e21 (9223372036854775808.0 is `9223372036854776000`), else with an
    exponent (`1e+21`, `1e-7`)."""
    if value == 0:
        return "0"
    size = abs(value)
    if size < 1e-6 or size >= 1e21:
        mantissa, _, exponent = repr(value).partition("e")
        sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
        if sign == "+" and len(digits) < 2:
            digits = digits.rjust(2, "0")  # strconv writes e+21, and e-7 after Go's clean-up
        return f"{mantissa}e{sign}{digits}"
    shortest = Decimal(repr(value))
    if shortest == shortest.to_integral_value():
        shortest = shortest.quantize(Decimal(1))
    return format(shortest, "f")


def _volumes_error(volumes: Any) -> str | None:
    found = _list_error(volumes, "PodSpec.spec.volumes", "[]v1.Volume", "v1.Volume")
    if found is not None:
        return found
    for volume in volumes:
        for key, value in (volume or {}).items():
            if value is None:
                continue
            if key == "name" and not isinstance(value, str):
                return unmarshal_type_error(value, "Volume.spec.volumes.name", "string")
            if key in _VOLUME_SOURCES:
                field = f"Volume.spec.volumes.VolumeSource.{key}"
                if not isinstance(value, dict):
                    return unmarshal_type_error(value, field, _VOLUME_SOURCES[key])
                found = _volume_source_error(key, value)
                if found is not None:
                    return found
    return None


#: A volume source's scalar fields by Go type.
_VOLUME_SOURCE_FIELDS: dict[str, dict[str, str]] = {
    "hostPath": {"path": "string", "type": "v1.HostPathType"},
    "nfs": {"server": "string", "path": "string", "readOnly": "bool"},
    "emptyDir": {"medium": "v1.StorageMedium"},
    "configMap": {"name": "string", "defaultMode": "int32"},
    "secret": {"secretName": "string", "defaultMode": "int32"},
    "persistentVolumeClaim": {"claimName": "string", "readOnly": "bool"},
}
#: A configMap source's name is a field of its embedded LocalObjectReference to Go.
_VOLUME_SOURCE_GO_NAMES = {"configMap": {"name": "LocalObjectReference.name"}}


def _volume_source_error(key: str, source: dict[str, Any]) -> str | None:
    """The first scalar of a volume source that is not of its Go type, in the body's order
    (`HostPathVolumeSource.spec.volumes.VolumeSource.hostPath.path of type string`)."""
    where = f"{_VOLUME_SOURCES[key][3:]}.spec.volumes.VolumeSource.{key}"
    types = _VOLUME_SOURCE_FIELDS.get(key, {})
    return _fields_error(source, where, types, _VOLUME_SOURCE_GO_NAMES.get(key))


def _list_error(value: Any, field: str, list_type: str, item_type: str) -> str | None:
    """A Go slice (`list_type`) of strings, or of structs for any other `item_type`."""
    if not isinstance(value, list):
        return unmarshal_type_error(value, field, list_type)
    want = str if item_type == "string" else dict
    wrong = next((v for v in value if v is not None and not isinstance(v, want)), None)
    return None if wrong is None else unmarshal_type_error(wrong, field, item_type)


def _string_map_error(value: Any, field: str) -> str | None:
    if not isinstance(value, dict):
        return unmarshal_type_error(value, field, "map[string]string")
    wrong = next((v for v in value.values() if v is not None and not isinstance(v, str)), None)
    return None if wrong is None else unmarshal_type_error(wrong, field, "string")


def _container_error(container: dict[str, Any], field: str) -> str | None:
    """The first of a container's fields a template gets wrong, in the body's order (Go
    decodes and stops at the first): the image, string lists, and the lists of structs
    (volume mounts, ports, env) with their scalar fields."""
    for key, value in container.items():
        if value is None:
            continue
        if key == "image":
            found = scalar_error(value, f"{field}.image", "string")
        elif key in _STRING_LISTS:
            found = _list_error(value, f"{field}.{key}", "[]string", "string")
        elif key in _CONTAINER_STRUCT_LISTS:
            found = _struct_list_error(value, field, key, *_CONTAINER_STRUCT_LISTS[key])
        else:
            found = None
        if found is not None:
            return found
    return None


def _struct_list_error(
    items: Any, field: str, key: str, struct: str, scalars: dict[str, str]
) -> str | None:
    """A container's list of `struct`s: the list, each item an object, each known field of
    its Go type (a struct-typed field, `_GO_STRUCTS`, must be an object)."""
    found = _list_error(items, f"{field}.{key}", f"[]v1.{struct}", f"v1.{struct}")
    if found is not None:
        return found
    where = f"{struct}.{field.split('.', 1)[1]}.{key}"
    for item in items:
        found = _fields_error(item or {}, where, scalars)
        if found is not None:
            return found
    return None


def _fields_error(
    obj: dict[str, Any], where: str, types: dict[str, str], go_names: dict[str, str] | None = None
) -> str | None:
    """The first of a struct's known fields that is not of its Go type, in the body's order
    (`where` names the struct; `go_names` the fields Go names otherwise, an embedded struct's).
    A struct-typed field (`_GO_STRUCTS`) must be an object."""
    for name, value in obj.items():
        go_type = types.get(name)
        if value is None or go_type is None:
            continue
        field = f"{where}.{(go_names or {}).get(name, name)}"
        if go_type in _GO_STRUCTS:
            found = None if isinstance(value, dict) else unmarshal_type_error(value, field, go_type)
        else:
            found = scalar_error(value, field, go_type)
        if found is not None:
            return found
    return None


#: A volume mount's scalar fields by Go type.
_MOUNT_SCALARS = {"name": "string", "mountPath": "string", "subPath": "string", "readOnly": "bool"}
#: The struct-typed fields checked in those lists: their value must be an object.
_GO_STRUCTS = frozenset({"v1.EnvVarSource"})
#: A container's lists of structs: the struct's Go name, its checked fields by Go type (the
#: int32 ports are left to validation).
_CONTAINER_STRUCT_LISTS: dict[str, tuple[str, dict[str, str]]] = {
    "volumeMounts": ("VolumeMount", _MOUNT_SCALARS),
    "ports": ("ContainerPort", {"name": "string", "protocol": "v1.Protocol", "hostIP": "string"}),
    "env": ("EnvVar", {"name": "string", "value": "string", "valueFrom": "v1.EnvVarSource"}),
}


#: ObjectMeta's scalar fields by Go type: a value of another JSON type is a decode error.
_META_STRINGS = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "selfLink": "string",
    "uid": "types.UID",
    "resourceVersion": "string",
}
_META_INTS = ("generation", "deletionGracePeriodSeconds")
_META_TIMES = ("creationTimestamp", "deletionTimestamp")
#: ObjectMeta's lists, by Go type of the list and of an element.
_META_LISTS = {
    "finalizers": ("[]string", "string"),
    "ownerReferences": ("[]v1.OwnerReference", "v1.OwnerReference"),
    "managedFields": ("[]v1.ManagedFieldsEntry", "v1.ManagedFieldsEntry"),
}
_META_MAPS = ("labels", "annotations")


def unmarshal_type_error(value: Any, field: str, go_type: str, number: str | None = None) -> str:
    """Go's UnmarshalTypeError; `number` is how Go wrote a refused number, when known."""
    shown = json_type(value)
    if shown == "number" and go_type in ("int64", "int32"):
        # Go names the number as the body wrote it; the decoded float is written back the
        # common way (`30.0`, `1e18`), the best guess without the body's text.
        if number is None:
            number = repr(value).replace("e+", "e") if isinstance(value, float) else str(value)
        shown = f"number {number}"
    return f"json: cannot unmarshal {shown} into Go struct field {field} of type {go_type}"


def object_meta_type_error(meta: Any, rt: Any) -> str:
    """Go's error for a metadata that is no object: a field of a built-in kind's struct, a
    value of its own for a custom resource (`rt`, a ResourceType, tells which)."""
    where = f"Go struct field {rt.kind}.metadata" if rt.builtin else "Go value"
    return f"json: cannot unmarshal {json_type(meta)} into {where} of type v1.ObjectMeta"


def object_meta_error(meta: dict[str, Any], prefix: str, typed: bool = True) -> str | None:
    """Go's decode error for ObjectMeta (see `object_meta_errors`), else None."""
    at_once, first = object_meta_errors(meta, prefix, typed)
    return at_once or first


def object_meta_errors(
    meta: dict[str, Any], prefix: str, typed: bool = True
) -> tuple[str | None, str | None]:
    """Go's decode errors for ObjectMeta: (the first that ends the decoding, the first that
    does not), each None when there is none.

    Go's decoder notes a value of the wrong JSON type and decodes on, reporting the first it
    noted at the end; a field type's own UnmarshalJSON failing (a creationTimestamp that is
    no time, or no string) ends the decoding at once, and that error is reported instead,
    wherever the noted one was. `prefix` is how Go names the struct's fields:
    `ObjectMeta.metadata.` inside a built-in kind, `ObjectMeta.` for a custom resource, whose
    metadata is decoded on its own from the decoded map (`typed` False: its numbers are
    float64s already, see `_decoded_int64_error`).
    """
    first: str | None = None
    for key, value in meta.items():
        if value is None:
            continue  # null leaves any Go field at its zero value
        field = f"{prefix}{key}"
        if key in _META_TIMES:
            at_once = time_field_error(value, field)
            if at_once is not None:
                return at_once, first
            continue
        if first is None:
            first = _meta_field_error(key, value, field, typed)
    return None, first


def time_field_error(value: Any, field: str, micro: bool = False) -> str | None:
    """The error of a metav1.Time (or MicroTime) field's UnmarshalJSON: not a string, or no
    time in the layout. Either ends Go's decoding at once (`object_meta_errors`)."""
    if not isinstance(value, str):
        return unmarshal_type_error(value, field, "string")
    return gotime.error(value, micro)


def _meta_field_error(key: str, value: Any, field: str, typed: bool) -> str | None:
    """The decode error of one ObjectMeta field other than its times, else None."""
    if key in _META_STRINGS and not isinstance(value, str):
        return unmarshal_type_error(value, field, _META_STRINGS[key])
    if key in _META_INTS:
        return scalar_error(value, field, "int64") if typed else _decoded_int64_error(value, field)
    if key in _META_LISTS:
        found = _list_error(value, field, *_META_LISTS[key])
        if found is None and key == "ownerReferences":
            found = _owner_reference_error(value, f"OwnerReference.{field.split('.', 1)[1]}")
        return found
    if key in _META_MAPS:
        return _string_map_error(value, field)
    return None


#: OwnerReference's fields by Go type.
_OWNER_FIELDS = {"apiVersion": "string", "kind": "string", "name": "string", "uid": "types.UID"}
_OWNER_FIELDS |= {"controller": "bool", "blockOwnerDeletion": "bool"}


def _owner_reference_error(references: list[Any], prefix: str) -> str | None:
    """The first ownerReferences field of the wrong type (`prefix` names the list)."""
    for reference in references:
        found = _fields_error(reference or {}, prefix, _OWNER_FIELDS)
        if found is not None:
            return found
    return None


#: An integer this large is no float64 either (float() would raise).
_BEYOND_FLOAT = 2**1024
#: Floats at or beyond this size are no JSON integers to kube-openapi (IsFloat64AJSONInteger).
JSON_INTEGER_LIMIT = 2**53


def _fits_int64(value: float) -> bool:
    return -(2**63) <= value < 2**63


class GoNegativeZero(int):
    """`-0.0` (or `-0e5`) as kube-apiserver's decoder leaves it: a float64 that Go prints as `-0`
    in a validation message ("Invalid value: -0: ... greater than or equal to 1"). It equals
    0 and is stored and sent as `0`, which every JSON reader takes for the same number."""

    def __repr__(self) -> str:
        return "-0"


#: The one negative zero `go_numbers` hands out.
NEGATIVE_ZERO = GoNegativeZero(0)


def go_numbers(value: Any) -> Any:
    """`value` with its numbers as kube-apiserver's unstructured decoder leaves them.

    An integral float below 2^53 in size becomes an int: the decoder keeps 1.0 as a float64,
    which Go encodes as `1` and kube-openapi takes for an integer. An integer literal beyond
    int64 becomes a float: Go reads it as a float64. Returns the same object when it holds
    no such number (the common case)."""
    if isinstance(value, float):
        if value == 0 and math.copysign(1.0, value) < 0:
            return NEGATIVE_ZERO
        return int(value) if value.is_integer() and abs(value) < JSON_INTEGER_LIMIT else value
    if isinstance(value, int) and not isinstance(value, bool):
        if _fits_int64(value) or abs(value) >= _BEYOND_FLOAT:
            return value  # (beyond a float64 too: left as it was)
        return float(value)
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, int | float | dict | list):
                value[key] = go_numbers(item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, int | float | dict | list):
                value[i] = go_numbers(item)
    return value
