"""Decode the few Kubernetes protobuf request bodies kubectl sends (pure).

kubectl's typed commands (`kubectl create namespace|configmap|secret|serviceaccount|service|
deployment|role|rolebinding|clusterrole|clusterrolebinding`) encode built-in objects as
`application/vnd.kubernetes.protobuf`, and client-go never falls back to JSON for request
bodies. Rather than a full protobuf stack, this reads the wire format with a small table of
field numbers for just those kinds (the fields those commands set); any other kind is refused
with 415, as a server that lacks a serializer would.
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
LABEL_SELECTOR: Spec = {
    1: ("matchLabels", ("map", "string")),
    2: (
        "matchExpressions",
        (
            "repeated",
            (
                "message",
                {
                    1: ("key", "string"),
                    2: ("operator", "string"),
                    3: ("values", ("repeated", "string")),
                },
            ),
        ),
    ),
}
KEY_REF: Spec = {1: ("name", "string"), 2: ("key", "string"), 3: ("optional", "bool")}
ENV_VAR: Spec = {
    1: ("name", "string"),
    2: ("value", "string"),
    3: (
        "valueFrom",
        (
            "message",
            {
                1: (
                    "fieldRef",
                    ("message", {1: ("apiVersion", "string"), 2: ("fieldPath", "string")}),
                ),
                3: (
                    "configMapKeyRef",
                    (
                        "message",
                        {
                            1: ("localObjectReference", ("message", LOCAL_REF)),
                            2: ("key", "string"),
                            3: ("optional", "bool"),
                        },
                    ),
                ),
                4: (
                    "secretKeyRef",
                    (
                        "message",
                        {
                            1: ("localObjectReference", ("message", LOCAL_REF)),
                            2: ("key", "string"),
                            3: ("optional", "bool"),
                        },
                    ),
                ),
            },
        ),
    ),
}
CONTAINER: Spec = {
    1: ("name", "string"),
    2: ("image", "string"),
    3: ("command", ("repeated", "string")),
    4: ("args", ("repeated", "string")),
    5: ("workingDir", "string"),
    6: (
        "ports",
        (
            "repeated",
            (
                "message",
                {
                    1: ("name", "string"),
                    2: ("hostPort", "int"),
                    3: ("containerPort", "int0"),
                    4: ("protocol", "string"),
                    5: ("hostIP", "string"),
                },
            ),
        ),
    ),
    7: ("env", ("repeated", ("message", ENV_VAR))),
    8: (
        "resources",
        (
            "message",
            {
                1: ("limits", ("map", "quantity")),
                2: ("requests", ("map", "quantity")),
            },
        ),
    ),
    9: (
        "volumeMounts",
        (
            "repeated",
            (
                "message",
                {
                    1: ("name", "string"),
                    2: ("readOnly", "bool"),
                    3: ("mountPath", "string"),
                    4: ("subPath", "string"),
                },
            ),
        ),
    ),
    13: ("terminationMessagePath", "string"),
    14: ("imagePullPolicy", "string"),
    16: ("stdin", "bool"),
    17: ("stdinOnce", "bool"),
    18: ("tty", "bool"),
    20: ("terminationMessagePolicy", "string"),
}
POD_SPEC: Spec = {
    2: ("containers", ("repeated", ("message", CONTAINER))),
    3: ("restartPolicy", "string"),
    4: ("terminationGracePeriodSeconds", "int0"),
    5: ("activeDeadlineSeconds", "int0"),
    6: ("dnsPolicy", "string"),
    7: ("nodeSelector", ("map", "string")),
    8: ("serviceAccountName", "string"),
    10: ("nodeName", "string"),
    11: ("hostNetwork", "bool"),
    15: ("imagePullSecrets", ("repeated", ("message", LOCAL_REF))),
    16: ("hostname", "string"),
    17: ("subdomain", "string"),
    19: ("schedulerName", "string"),
    20: ("initContainers", ("repeated", ("message", CONTAINER))),
    24: ("priorityClassName", "string"),
}
POD_TEMPLATE: Spec = {1: ("metadata", ("message", OBJECT_META)), 2: ("spec", ("message", POD_SPEC))}
POLICY_RULE: Spec = {
    1: ("verbs", ("repeated", "string")),
    2: ("apiGroups", ("repeated", "string")),
    3: ("resources", ("repeated", "string")),
    4: ("resourceNames", ("repeated", "string")),
    5: ("nonResourceURLs", ("repeated", "string")),
}
BINDING: Spec = {
    1: ("metadata", ("message", OBJECT_META)),
    2: (
        "subjects",
        (
            "repeated",
            (
                "message",
                {
                    1: ("kind", "string"),
                    2: ("apiGroup", "string"),
                    3: ("name", "string"),
                    4: ("namespace", "string"),
                },
            ),
        ),
    ),
    3: (
        "roleRef",
        ("message", {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")}),
    ),
}
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
    "Service": {
        1: ("metadata", ("message", OBJECT_META)),
        2: (
            "spec",
            (
                "message",
                {
                    1: (
                        "ports",
                        (
                            "repeated",
                            (
                                "message",
                                {
                                    1: ("name", "string"),
                                    2: ("protocol", "string"),
                                    3: ("port", "int0"),
                                    4: ("targetPort", "intorstr"),
                                    5: ("nodePort", "int"),
                                    6: ("appProtocol", "string"),
                                },
                            ),
                        ),
                    ),
                    2: ("selector", ("map", "string")),
                    3: ("clusterIP", "string"),
                    4: ("type", "string"),
                    5: ("externalIPs", ("repeated", "string")),
                    7: ("sessionAffinity", "string"),
                    10: ("externalName", "string"),
                },
            ),
        ),
    },
    "Deployment": {
        1: ("metadata", ("message", OBJECT_META)),
        2: (
            "spec",
            (
                "message",
                {
                    1: ("replicas", "int0"),
                    2: ("selector", ("message", LABEL_SELECTOR)),
                    3: ("template", ("message", POD_TEMPLATE)),
                    4: ("strategy", ("message", {1: ("type", "string")})),
                    5: ("minReadySeconds", "int"),
                    6: ("revisionHistoryLimit", "int0"),
                    7: ("paused", "bool"),
                    9: ("progressDeadlineSeconds", "int0"),
                },
            ),
        ),
    },
    "Role": {
        1: ("metadata", ("message", OBJECT_META)),
        2: ("rules", ("repeated", ("message", POLICY_RULE))),
    },
    "ClusterRole": {
        1: ("metadata", ("message", OBJECT_META)),
        2: ("rules", ("repeated", ("message", POLICY_RULE))),
    },
    "RoleBinding": BINDING,
    "ClusterRoleBinding": BINDING,
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
    if kind in ("int", "int0"):
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == "bool":
        return bool(value)
    if kind == "quantity":
        return bytes(dict((n, v) for n, _, v in _fields(bytes(value))).get(1, b"")).decode()
    if kind == "intorstr":
        parts = {n: v for n, _, v in _fields(bytes(value))}
        return bytes(parts.get(3, b"")).decode() if parts.get(1) == 1 else parts.get(2, 0)
    if isinstance(kind, tuple) and kind[0] == "message":
        return decode_message(bytes(value), kind[1])
    raise ProtobufError(f"unsupported field type {kind!r}")


def _is_zero(kind: Any, value: Any) -> bool:
    """Go's omitempty: gogo protobuf writes unset non-pointer fields, JSON would omit them."""
    return (kind == "string" and value == "") or (kind in ("bool", "int") and not value)


def decode_message(data: bytes, spec: Spec) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, _, raw in _fields(data):
        if number not in spec:
            continue  # fields we do not model (timestamps, managedFields) are server-set anyway
        name, kind = spec[number]
        value: Any = raw
        if isinstance(kind, tuple) and kind[0] == "map":
            entry = {n: v for n, _, v in _fields(bytes(value))}
            key = bytes(entry.get(1, b"")).decode()
            obj.setdefault(name, {})[key] = _scalar(kind[1], entry.get(2, b""))
        elif isinstance(kind, tuple) and kind[0] == "repeated":
            obj.setdefault(name, []).append(_scalar(kind[1], value))
        else:
            decoded = _scalar(kind, value)
            if not _is_zero(kind, decoded):
                obj[name] = decoded
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
