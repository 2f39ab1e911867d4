"""Decode the few Kubernetes protobuf request bodies kubectl sends (pure).

kubectl's typed commands (`kubectl create namespace`, `create configmap`, `create secret`,
`create serviceaccount`) encode built-in objects as `application/vnd.kubernetes.protobuf`, and
client-go never falls back to JSON for request bodies. Rather than a full protobuf stack, this
reads the wire format with a small table of field numbers for just those kinds; any other kind
is refused with 415, as a server that lacks a serializer would.
"""

from __future__ import annotations

import base64
from typing import Any

MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    pass


# A field spec: (json name, type) where type is "string", "bytes", "int", "bool", "time",
# ("message", spec), ("map", value type), or ("repeated", type).
Spec = dict[int, tuple[str, Any]]

OWNER_REF: Spec = {
    1: ("kind", "string"),
    3: ("name", "string"),
    4: ("uid", "string"),
    5: ("apiVersion", "string"),
    6: ("controller", "bool"),
    7: ("blockOwnerDeletion", "bool"),
}
OBJECT_META: Spec = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    5: ("uid", "string"),
    6: ("resourceVersion", "string"),
    7: ("generation", "int"),
    10: ("deletionGracePeriodSeconds", "int"),
    11: ("labels", ("map", "string")),
    12: ("annotations", ("map", "string")),
    13: ("ownerReferences", ("repeated", ("message", OWNER_REF))),
    14: ("finalizers", ("repeated", "string")),
}
LOCAL_REF: Spec = {1: ("name", "string")}
KINDS: dict[str, Spec] = {
    "Namespace": {
        1: ("metadata", ("message", OBJECT_META)),
        2: ("spec", ("message", {1: ("finalizers", ("repeated", "string"))})),
    },
    "ConfigMap": {
        1: ("metadata", ("message", OBJECT_META)),
        2: ("data", ("map", "string")),
        3: ("binaryData", ("map", "bytes")),
        4: ("immutable", "bool"),
    },
    "Secret": {
        1: ("metadata", ("message", OBJECT_META)),
        2: ("data", ("map", "bytes")),
        3: ("type", "string"),
        4: ("stringData", ("map", "string")),
        5: ("immutable", "bool"),
    },
    "ServiceAccount": {
        1: ("metadata", ("message", OBJECT_META)),
        3: ("imagePullSecrets", ("repeated", ("message", LOCAL_REF))),
        4: ("automountServiceAccountToken", "bool"),
    },
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, raw value) in order."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value = data[pos : pos + length]
            if len(data) < pos + length:
                raise ProtobufError("truncated field")
            pos += length
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _scalar(kind: Any, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind == "int":
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == "bool":
        return bool(value)
    if isinstance(kind, tuple) and kind[0] == "message":
        return decode_message(bytes(value), kind[1])
    raise ProtobufError(f"unsupported field type {kind!r}")


def decode_message(data: bytes, spec: Spec) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, _, value in _fields(data):
        if number not in spec:
            continue  # fields we do not model (timestamps, managedFields) are server-set anyway
        name, kind = spec[number]
        if isinstance(kind, tuple) and kind[0] == "map":
            entry = {n: v for n, _, v in _fields(bytes(value))}
            key = bytes(entry.get(1, b"")).decode()
            obj.setdefault(name, {})[key] = _scalar(kind[1], entry.get(2, b""))
        elif isinstance(kind, tuple) and kind[0] == "repeated":
            obj.setdefault(name, []).append(_scalar(kind[1], value))
        else:
            obj[name] = _scalar(kind, value)
    return obj


def decode(data: bytes) -> dict[str, Any]:
    """A `k8s\\x00` envelope with a runtime.Unknown inside, to a JSON-shaped object."""
    if not data.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf envelope")
    unknown = {n: v for n, _, v in _fields(data[len(MAGIC) :])}
    type_meta = {n: bytes(v).decode() for n, _, v in _fields(bytes(unknown.get(1, b"")))}
    api_version, kind = type_meta.get(1, ""), type_meta.get(2, "")
    spec = KINDS.get(kind)
    if spec is None:
        raise ProtobufError(f"protobuf bodies are not supported for kind {kind!r}")
    obj = decode_message(bytes(unknown.get(2, b"")), spec)
    return {"apiVersion": api_version, "kind": kind, **obj}
