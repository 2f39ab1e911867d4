"""Validation of built-in kinds: the checks of kube-apiserver's registries clients run into.

Only a few rules per kind, worded as upstream words them (the 422 causes kubectl prints):
pods need containers whose names are DNS-1123 labels, name their volumes (an nfs path is
absolute), mount only those, source each `valueFrom` and keep their tolerations; Service
ports are in range, cluster IPs never change, load-balancer status needs a LoadBalancer;
ConfigMap keys are valid, their values total at most 1 MiB, and an immutable ConfigMap keeps
its data; a Lease lasts more than 0 s; a Namespace is only Terminating while it is being
deleted. Everything else a real server validates is accepted.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ascendjob_controller.localcluster.goquote import go_quote
from ascendjob_controller.localcluster.metadata_rules import label_causes

Cause = dict[str, str]
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CONFIG_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def dns1123_label_error(name: str) -> str:
    """apimachinery's IsDNS1123Label detail for `name`, "" when it is one: a Namespace's or
    Service's name, a container's."""
    if len(name) > 63:
        return "must be no more than 63 characters"
    return "" if _DNS1123_LABEL.match(name) else _DNS1123_LABEL_MESSAGE


_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1035_LABEL_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def dns1035_label_errors(name: str) -> list[str]:
    """apimachinery's IsDNS1035Label: every problem of `name` (a CRD's plural, singular,
    short names...), [] when it is one."""
    errors = ["must be no more than 63 characters"] if len(name) > 63 else []
    if not _DNS1035_LABEL.fullmatch(name):
        errors.append(_DNS1035_LABEL_MESSAGE)
    return errors


#: An env var's `valueFrom` names exactly one of these (kube-apiserver 1.35+ lists fileKeyRef).
_ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
_ENV_SOURCE_MESSAGE = (
    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` "
    "or `fileKeyRef`"
)


_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_RESTART_POLICIES = ("Always", "OnFailure", "Never")


def port_name_errors(name: str) -> list[str]:
    """apimachinery's IsValidPortName (an IANA service name): every problem of `name`."""
    errors = []
    if len(name.encode("utf-8", "surrogatepass")) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name[:1] == "-" or name[-1:] == "-":
        errors.append("must not begin or end with a hyphen")
    return errors


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{v}"' for v in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {go_quote(value)}: supported values: {listed}",
        "field": field,
    }


def _duplicate(field: str, value: str) -> Cause:
    return {
        "reason": "FieldValueDuplicate",
        "message": f"Duplicate value: {go_quote(value)}",
        "field": field,
    }


def _port_number(field: str, value: Any) -> list[Cause]:
    """IsValidPortNum for an int (other types are the decoder's)."""
    if type(value) is int and not 1 <= value <= 65535:
        return [invalid_cause(field, value, _PORT_RANGE)]
    return []


def invalid_cause(field: str, value: Any, detail: str) -> Cause:
    """A FieldValueInvalid cause: `Invalid value: <value as Go prints it>: <detail>`."""
    if isinstance(value, str):
        shown = go_quote(value)
    else:
        shown = json.dumps(value) if isinstance(value, list) else str(value)
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": field,
    }


def _forbidden(field: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def _required(field: str) -> Cause:
    return {"reason": "FieldValueRequired", "message": "Required value", "field": field}


def on_create(kind: str, obj: dict[str, Any]) -> list[Cause]:
    """Causes for a new object of a built-in kind (empty when valid)."""
    if kind == "Pod":
        spec = obj.get("spec")
        if not isinstance(spec, dict) or not spec.get("containers"):
            return [_required("spec.containers")]
        return _pod_spec(spec)
    if kind == "Service":
        return _service_ports(obj)
    if kind == "ConfigMap":
        return _config_keys(obj) or _config_size(obj)
    if kind == "Lease":
        return _lease(obj)
    return []


def on_update(kind: str, old: dict[str, Any], new: dict[str, Any], subresource: str) -> list[Cause]:
    """Causes for an update (main resource or status) of a built-in kind."""
    if subresource == "status":
        if kind == "Service":
            return _load_balancer_status(new)
        if kind == "Namespace":
            return _namespace_phase(new)
        return []
    if kind == "Pod":
        return _pod_tolerations(old, new)
    if kind == "Service":
        return _service_ports(new) or _cluster_ips(old, new)
    if kind == "ConfigMap":
        return _config_keys(new) or _immutable_config(old, new) or _config_size(new)
    if kind == "Lease":
        return _lease(new)
    return []


def _pod_spec(spec: dict[str, Any]) -> list[Cause]:
    """A few of `validation.ValidatePodSpec`'s checks, in its order (volumes, containers, init
    containers): the mistakes hand-written templates make most, found by `make fuzz`."""
    causes: list[Cause] = []
    volumes = spec.get("volumes")
    names: set[str] = set()
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        name = volume.get("name") if isinstance(volume, dict) else None
        if not name:
            causes.append(_required(f"spec.volumes[{i}].name"))
        else:
            names.add(str(name))
        config_map = volume.get("configMap") if isinstance(volume, dict) else None
        if isinstance(config_map, dict) and not config_map.get("name"):
            causes.append(_required(f"spec.volumes[{i}].configMap.name"))
        causes += _host_path(volume.get("hostPath") if isinstance(volume, dict) else None, i)
        nfs = volume.get("nfs") if isinstance(volume, dict) else None
        path = nfs.get("path") if isinstance(nfs, dict) else None
        if isinstance(path, str) and path and not path.startswith("/"):
            causes.append(
                invalid_cause(f"spec.volumes[{i}].nfs.path", path, "must be an absolute path")
            )
    for list_name in ("containers", "initContainers"):
        containers = spec.get(list_name)
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            if isinstance(container, dict):
                causes += _container(container, f"spec.{list_name}[{i}]", names)
    policy = spec.get("restartPolicy")
    if isinstance(policy, str) and policy and policy not in _RESTART_POLICIES:
        causes.append(_not_supported("spec.restartPolicy", policy, _RESTART_POLICIES))
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        causes += label_causes(selector, "spec.nodeSelector")
    return causes


def _host_path(source: Any, index: int) -> list[Cause]:
    """validateHostPathVolumeSource's path checks: given, and no `..` step in it."""
    if not isinstance(source, dict):
        return []
    field = f"spec.volumes[{index}].hostPath.path"
    path = source.get("path")
    if not path:
        return [_required(field)]
    if isinstance(path, str) and ".." in path.split("/"):
        return [invalid_cause(field, path, "must not contain '..'")]
    return []


def _container(container: dict[str, Any], path: str, volumes: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = container.get("name")
    if not name:
        causes.append(_required(f"{path}.name"))
    elif not isinstance(name, str):
        causes.append(invalid_cause(f"{path}.name", name, _DNS1123_LABEL_MESSAGE))
    elif detail := dns1123_label_error(name):
        causes.append(invalid_cause(f"{path}.name", name, detail))
    ports = container.get("ports")
    causes += _container_ports(ports if isinstance(ports, list) else [], f"{path}.ports")
    env = container.get("env")
    for i, var in enumerate(env if isinstance(env, list) else []):
        source = var.get("valueFrom") if isinstance(var, dict) else None
        if isinstance(source, dict) and not any(source.get(k) for k in _ENV_SOURCES):
            causes.append(invalid_cause(f"{path}.env[{i}].valueFrom", "", _ENV_SOURCE_MESSAGE))
    mounts = container.get("volumeMounts")
    causes += _volume_mounts(mounts if isinstance(mounts, list) else [], path, volumes)
    return causes + _image(container.get("image"), f"{path}.image")


#: Go's unicode.IsSpace, which strings.TrimSpace trims (Python's str.strip() also trims
#: \x1c-\x1f).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)


def _image(image: Any, field: str) -> list[Cause]:
    """validateContainers' image checks, after the checks common to every container: given,
    and no leading or trailing whitespace."""
    if not image:
        return [_required(field)]
    if isinstance(image, str) and image != image.strip(_GO_SPACE):
        return [invalid_cause(field, image, "must not have leading or trailing whitespace")]
    return []


def _container_ports(ports: list[Any], path: str) -> list[Cause]:
    """validateContainerPorts, in its order per port: the name (an IANA service name, unique
    in the container), the container port (given, in range), the host port, the protocol
    (defaulted to TCP when decoded)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        at = f"{path}[{i}]"
        name = port.get("name")
        if isinstance(name, str) and name:
            if errors := port_name_errors(name):
                causes += [invalid_cause(f"{at}.name", name, error) for error in errors]
            elif name in names:
                causes.append(_duplicate(f"{at}.name", name))
            names.add(name)
        if not port.get("containerPort"):
            causes.append(_required(f"{at}.containerPort"))
        else:
            causes += _port_number(f"{at}.containerPort", port["containerPort"])
        if port.get("hostPort"):
            causes += _port_number(f"{at}.hostPort", port["hostPort"])
        protocol = port.get("protocol")
        if isinstance(protocol, str) and protocol and protocol not in _PROTOCOLS:
            causes.append(_not_supported(f"{at}.protocol", protocol, _PROTOCOLS))
    return causes


def _volume_mounts(mounts: list[Any], path: str, volumes: set[str]) -> list[Cause]:
    """ValidateVolumeMounts' first checks, in its order: the name (given, and a volume's),
    then the mount path (given, and unique in the container)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, mount in enumerate(mounts):
        mount = mount if isinstance(mount, dict) else {}
        mount_name = str(mount.get("name") or "")
        field = f"{path}.volumeMounts[{i}].name"
        if not mount_name:
            causes.append(_required(field))
        if mount_name not in volumes:
            causes.append(
                {
                    "reason": "FieldValueNotFound",
                    "message": f'Not found: "{mount_name}"',
                    "field": field,
                }
            )
        mount_path = str(mount.get("mountPath") or "")
        if not mount_path:
            causes.append(_required(f"{path}.volumeMounts[{i}].mountPath"))
        if mount_path in seen:
            causes.append(
                invalid_cause(f"{path}.volumeMounts[{i}].mountPath", mount_path, "must be unique")
            )
        seen.add(mount_path)
    return causes


def _service_ports(svc: dict[str, Any]) -> list[Cause]:
    """validateServicePort, in its order per port: the name (required when there are several
    ports, a DNS-1123 label, unique), the port, the protocol, the target port (a number in
    range or an IANA service name)."""
    causes: list[Cause] = []
    ports = (svc.get("spec") or {}).get("ports") or []
    names: set[str] = set()
    for i, port in enumerate(ports if isinstance(ports, list) else []):
        if not isinstance(port, dict):
            continue
        at = f"spec.ports[{i}]"
        name = port.get("name")
        if not name and len(ports) > 1:
            causes.append(_required(f"{at}.name"))
        elif isinstance(name, str) and name:
            if detail := dns1123_label_error(name):
                causes.append(invalid_cause(f"{at}.name", name, detail))
            if name in names:
                causes.append(_duplicate(f"{at}.name", name))
            names.add(name)
        causes += _port_number(f"{at}.port", port.get("port"))
        protocol = port.get("protocol")
        if isinstance(protocol, str) and protocol and protocol not in _PROTOCOLS:
            causes.append(_not_supported(f"{at}.protocol", protocol, _PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            causes += [
                invalid_cause(f"{at}.targetPort", target, e) for e in port_name_errors(target)
            ]
        else:
            causes += _port_number(f"{at}.targetPort", target)
    return causes


def _cluster_ips(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """clusterIP and clusterIPs[0] are fixed once allocated (the registry syncs the two)."""
    before = (old.get("spec") or {}).get("clusterIPs") or []
    spec = new.get("spec") or {}
    after = list(spec.get("clusterIPs") or [])
    if spec.get("clusterIP") and spec.get("clusterIP") != (before[0] if before else None):
        after = [spec["clusterIP"], *after[1:]]
    if before and after and after[0] != before[0]:
        return [invalid_cause("spec.clusterIPs[0]", after, "may not change once set")]
    return []


def _load_balancer_status(svc: dict[str, Any]) -> list[Cause]:
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress")
    if ingress and (svc.get("spec") or {}).get("type") != "LoadBalancer":
        return [
            _forbidden(
                "status.loadBalancer.ingress", "may only be used when `spec.type` is 'LoadBalancer'"
            )
        ]
    return []


def _config_keys(cm: dict[str, Any]) -> list[Cause]:
    causes = []
    for field in ("data", "binaryData"):
        for key in cm.get(field) or {}:
            if not _CONFIG_KEY.match(key) or len(key) > 253:
                causes.append(invalid_cause(f"{field}[{key}]", key, _CONFIG_KEY_MESSAGE))
    return causes


#: corev1.MaxSecretSize, which ValidateConfigMap applies to data and binaryData together.
CONFIG_MAP_MAX_BYTES = 1024 * 1024


def _config_size(cm: dict[str, Any]) -> list[Cause]:
    """The values of data (UTF-8 bytes) and binaryData (decoded bytes) total at most 1 MiB."""
    total = sum(len(str(v).encode()) for v in (cm.get("data") or {}).values())
    # base64 text: 4 characters for 3 bytes, less the padding.
    for value in (cm.get("binaryData") or {}).values():
        text = str(value)
        total += len(text) * 3 // 4 - text[-2:].count("=")
    if total <= CONFIG_MAP_MAX_BYTES:
        return []
    return [
        {
            "reason": "FieldValueTooLong",
            "message": f"Too long: may not be more than {CONFIG_MAP_MAX_BYTES} bytes",
            "field": "",
        }
    ]


def _immutable_config(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    if not old.get("immutable"):
        return []
    causes = [
        _forbidden(field, "field is immutable when `immutable` is set")
        for field in ("data", "binaryData")
        if (old.get(field) or {}) != (new.get(field) or {})
    ]
    if not new.get("immutable"):
        causes.append(_forbidden("immutable", "field is immutable when `immutable` is set"))
    return causes


def _lease(lease: dict[str, Any]) -> list[Cause]:
    duration = (lease.get("spec") or {}).get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        return [invalid_cause("spec.leaseDurationSeconds", duration, "must be greater than 0")]
    return []


def _namespace_phase(ns: dict[str, Any]) -> list[Cause]:
    phase = (ns.get("status") or {}).get("phase")
    if phase == "Terminating" and not (ns.get("metadata") or {}).get("deletionTimestamp"):
        detail = "may only be 'Active' if `deletionTimestamp` is empty"
        return [invalid_cause("status.Phase", phase, detail)]
    return []


def _pod_tolerations(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """Tolerations may be added, never changed or removed (tolerationSeconds aside)."""

    def key(t: Any) -> str:
        if not isinstance(t, dict):
            return json.dumps(t)
        return json.dumps({k: v for k, v in t.items() if k != "tolerationSeconds"}, sort_keys=True)

    before = [key(t) for t in (old.get("spec") or {}).get("tolerations") or []]
    after = {key(t) for t in (new.get("spec") or {}).get("tolerations") or []}
    if any(t not in after for t in before):
        return [
            _forbidden(
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            )
        ]
    return []
