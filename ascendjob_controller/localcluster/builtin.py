"""Built-in kinds the local cluster serves, and the defaults their real registries apply.

Only the defaults a client can observe and rely on are modelled: a pod starts Pending with
the scheduler and restart defaults; a Service gets a ClusterIP and normalized ports.
"""

from __future__ import annotations

import ipaddress
import json
import threading
from typing import Any

from ascendjob_controller.localcluster import pods, validation
from ascendjob_controller.localcluster.resources import ResourceType

_STATUS = frozenset({"status"})

NAMESPACES = ResourceType(
    "",
    "v1",
    "Namespace",
    "namespaces",
    "namespace",
    False,
    ("ns",),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    subresources=frozenset({"status", "finalize"}),
)
PODS = ResourceType(
    "",
    "v1",
    "Pod",
    "pods",
    "pod",
    True,
    ("po",),
    subresources=frozenset({"status", "binding", "log"}),
    categories=("all",),
)
SERVICES = ResourceType(
    "",
    "v1",
    "Service",
    "services",
    "service",
    True,
    ("svc",),
    subresources=_STATUS,
    categories=("all",),
)
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",))
EVENTS = ResourceType("", "v1", "Event", "events", "event", True, ("ev",))
SERVICEACCOUNTS = ResourceType(
    "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",)
)
SECRETS = ResourceType("", "v1", "Secret", "secrets", "secret", True)
NEW_EVENTS = ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",))
LEASES = ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True)
CRDS = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    "customresourcedefinition",
    False,
    ("crd", "crds"),
    subresources=_STATUS,
    categories=("api-extensions",),
)
DEPLOYMENTS = ResourceType(
    "apps",
    "v1",
    "Deployment",
    "deployments",
    "deployment",
    True,
    ("deploy",),
    subresources=_STATUS,
    categories=("all",),
)
CLUSTERROLES = ResourceType(
    "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False
)
CLUSTERROLEBINDINGS = ResourceType(
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRoleBinding",
    "clusterrolebindings",
    "clusterrolebinding",
    False,
)
ROLES = ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True)
ROLEBINDINGS = ResourceType(
    "rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True
)

NODES = ResourceType("", "v1", "Node", "nodes", "node", False, ("no",), subresources=_STATUS)

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
    CONFIGMAPS,
    EVENTS,
    SERVICEACCOUNTS,
    SECRETS,
    NEW_EVENTS,
    LEASES,
    CRDS,
    DEPLOYMENTS,
    CLUSTERROLES,
    CLUSTERROLEBINDINGS,
    ROLES,
    ROLEBINDINGS,
)

# Field selectors each kind supports beyond metadata.name/metadata.namespace (as kube's
# field label conversion functions allow); anything else is 400 "field label not supported".
_POD_FIELDS = frozenset(
    {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    }
)
_EVENT_FIELDS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)
SELECTABLE_FIELDS: dict[str, frozenset[str]] = {
    "pods": _POD_FIELDS,
    "events": _EVENT_FIELDS,
    "events.events.k8s.io": frozenset(
        {
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "reason",
            "type",
            "reportingController",
        }
    ),
    "namespaces": frozenset({"status.phase"}),
    "nodes": frozenset({"spec.unschedulable"}),
    "secrets": frozenset({"type"}),
}
ALWAYS_SELECTABLE = frozenset({"metadata.name", "metadata.namespace"})

# Built-in kinds whose registries keep metadata.generation (custom resources all do); the
# others (ConfigMaps, Services, Leases, Namespaces...) never show one.
_GENERATION_KINDS = frozenset(
    {"pods", "deployments.apps", "customresourcedefinitions.apiextensions.k8s.io"}
)


def has_generation(rt: ResourceType) -> bool:
    return not rt.builtin or rt.group_resource in _GENERATION_KINDS


INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


class ClusterIPAllocator:
    """Hands out addresses from 10.96.0.0/12 like the service IP allocator (never .0 or .1)."""

    def __init__(self, cidr: str = "10.96.0.0/12") -> None:
        self._net = ipaddress.ip_network(cidr)
        self._used: set[str] = {str(self._net.network_address + 1)}  # the kubernetes service
        self._next = 10
        self._lock = threading.Lock()

    def allocate(self) -> str:
        with self._lock:
            size = self._net.num_addresses - 2
            for _ in range(size):
                candidate = str(self._net.network_address + 1 + (self._next % size))
                self._next += 1
                if candidate not in self._used:
                    self._used.add(candidate)
                    return candidate
            raise RuntimeError("service IP range exhausted")

    def reserve(self, ip: str) -> bool:
        with self._lock:
            if ip in self._used:
                return False
            self._used.add(ip)
            return True

    def release(self, ip: str) -> None:
        with self._lock:
            self._used.discard(ip)


def decode_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    """The defaults a write gets when its body is decoded (SetDefaults_*), before admission.

    They are the writer's own fields for managedFields; what admission and the registry add
    afterwards (service account, cluster IP, status) is nobody's.
    """
    if rt is PODS:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            default_pod_spec(spec, priority=False)
    elif rt is SERVICES:
        default_service_spec(obj.setdefault("spec", {}))
    elif rt is NAMESPACES:
        meta = obj["metadata"]
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
    elif rt is EVENTS:
        from ascendjob_controller.localcluster import eventsapi

        eventsapi.core_defaults(obj)


_OMITTED_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences")


def omit_empty(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Drop what a Go type leaves out when empty (omitempty), and fill converted fields.

    Custom resources are stored as sent, so only built-in kinds lose their empty
    metadata maps and lists; a pod's status.podIPs follows its podIP (v1 conversion).
    """
    if not rt.builtin:
        return
    meta = obj.get("metadata") or {}
    for key in _OMITTED_WHEN_EMPTY:
        if key in meta and not meta[key]:
            del meta[key]
    for key in ("data", "binaryData", "stringData"):
        if key in obj and obj[key] in ({}, None) and rt.kind in ("ConfigMap", "Secret"):
            del obj[key]
    status = obj.get("status")
    if rt is PODS and isinstance(status, dict):
        for single, plural in (("podIP", "podIPs"), ("hostIP", "hostIPs")):
            if status.get(single) and not status.get(plural):
                status[plural] = [{"ip": status[single]}]


def default_pod(obj: dict[str, Any]) -> None:
    """The defaults and initial status the pod registry gives every new pod."""
    spec = obj.setdefault("spec", {})
    default_pod_spec(spec)
    obj["status"] = {"phase": "Pending", "qosClass": pods.qos_class(spec)}


POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def pod_spec_change_allowed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether an update changes only the mutable parts of a pod spec (after defaulting).

    One leniency: binding by setting spec.nodeName when it was empty, which the simulated
    kubelet does instead of posting to pods/binding.
    """

    def masked(spec: dict[str, Any], node: str) -> dict[str, Any]:
        out = json.loads(json.dumps(spec))
        default_pod_spec(out)
        for field in ("containers", "initContainers"):
            for container in out.get(field) or []:
                if isinstance(container, dict):
                    container.pop("image", None)
        for field in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
            out.pop(field, None)
        out["nodeName"] = node
        return out

    node = old.get("nodeName") or new.get("nodeName") or ""
    return masked(old, node) == masked(new, node)


def default_pod_spec(spec: dict[str, Any], priority: bool = True) -> None:
    """Pod spec defaults; `priority` adds what the Priority admission plugin sets too."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    if priority:
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
    pods.default_requests(spec)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _default_volume_source(volume)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if isinstance(container, dict):
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            image = str(container.get("image", ""))
            latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
            container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


#: A file mode the API server gives a volume's files when the pod does not say (0644).
DEFAULT_VOLUME_MODE = 420


def _default_volume_source(volume: dict[str, Any]) -> None:
    """The defaults of the volume sources pods commonly use (SetDefaults_*VolumeSource)."""
    for kind in ("configMap", "secret"):
        source = volume.get(kind)
        if isinstance(source, dict):
            source.setdefault("defaultMode", DEFAULT_VOLUME_MODE)
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        host_path.setdefault("type", "")


def default_service_spec(spec: dict[str, Any]) -> None:
    """Type, session affinity, port protocol/targetPort and traffic policy defaults."""
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            if not port.get("protocol"):
                port["protocol"] = "TCP"
            if "port" in port and port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port["port"]  # 0 and "" are unset to Go too
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")


def default_service(obj: dict[str, Any], allocator: ClusterIPAllocator) -> None:
    """The spec defaults and a ClusterIP unless headless (the service registry's part)."""
    spec = obj.setdefault("spec", {})
    default_service_spec(spec)
    if spec["type"] != "ExternalName":
        ip = spec.get("clusterIP") or ""
        if ip == "None":
            spec["clusterIPs"] = ["None"]
        else:
            if not ip:
                ip = allocator.allocate()
            else:
                allocator.reserve(ip)
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    obj["status"] = {"loadBalancer": {}}


def default_namespace(obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    labels = meta.setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = meta["name"]
    obj["spec"] = {"finalizers": ["kubernetes"]}
    obj["status"] = {"phase": "Active"}


def _crd_names_causes(names: dict[str, Any]) -> list[dict[str, str]]:
    """spec.names as kube-apiserver v1.37 checks them: plural, singular, short names and
    categories are DNS-1035 labels; kind and listKind may have mixed case but are otherwise
    one too, and may not be the same."""
    causes: list[dict[str, str]] = []

    def check(field: str, value: Any, mixed_case: bool = False) -> None:
        if not isinstance(value, str) or not value:
            return
        errors = ",".join(validation.dns1035_label_errors(value.lower() if mixed_case else value))
        if errors:
            prefix = "may have mixed case, but should otherwise match: " if mixed_case else ""
            causes.append(validation.invalid_cause(field, value, prefix + errors))

    check("spec.names.plural", names.get("plural"))
    check("spec.names.singular", names.get("singular"))
    check("spec.names.kind", names.get("kind"), mixed_case=True)
    check("spec.names.listKind", names.get("listKind"), mixed_case=True)
    short = names.get("shortNames")
    for i, name in enumerate(short if isinstance(short, list) else []):
        check(f"spec.names.shortNames[{i}]", name)
    kind = names.get("kind")
    if isinstance(kind, str) and kind and kind == names.get("listKind"):
        causes.append(
            validation.invalid_cause(
                "spec.names.listKind", kind, "kind and listKind may not be the same"
            )
        )
    categories = names.get("categories")
    for i, category in enumerate(categories if isinstance(categories, list) else []):
        check(f"spec.names.categories[{i}]", category)
    return causes


def validate_crd(crd: dict[str, Any]) -> list[dict[str, str]]:
    """The structural checks a CRD needs before it can be served (as Invalid causes)."""
    causes: list[dict[str, str]] = []

    def need(ok: bool, field: str, message: str = "Required value") -> None:
        if not ok:
            reason = "FieldValueRequired" if message == "Required value" else "FieldValueInvalid"
            causes.append({"reason": reason, "message": message, "field": field})

    spec = crd.get("spec")
    if not isinstance(spec, dict):
        need(False, "spec")
        return causes
    raw_names = spec.get("names")
    names: dict[str, Any] = raw_names if isinstance(raw_names, dict) else {}
    group = spec.get("group")
    need(isinstance(group, str) and bool(group), "spec.group")
    need(isinstance(names.get("plural"), str) and bool(names.get("plural")), "spec.names.plural")
    need(isinstance(names.get("kind"), str) and bool(names.get("kind")), "spec.names.kind")
    causes += _crd_names_causes(names)
    need(
        spec.get("scope") in ("Namespaced", "Cluster"),
        "spec.scope",
        f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
    )
    versions = spec.get("versions")
    need(isinstance(versions, list) and bool(versions), "spec.versions")
    if isinstance(versions, list):
        for i, version in enumerate(versions):
            ok = isinstance(version, dict) and isinstance(version.get("name"), str)
            need(ok, f"spec.versions[{i}].name")
        storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
        need(
            len(storage) == 1,
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        )
    expected = f"{names.get('plural')}.{group}"
    name = (crd.get("metadata") or {}).get("name")
    need(
        name == expected,
        "metadata.name",
        f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
    )
    return causes


def node_object(name: str, ip: str, now: str) -> dict[str, Any]:
    """The Node a kubelet would register: Ready, with an address and Ascend capacity.

    Labels include the ones the sample AscendJob selects on (host-arch, accelerator-type).
    """
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110", "huawei.com/Ascend910": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "host-arch": "huawei-arm",
                "accelerator-type": "card-910b-2",
            },
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": {
                "machineID": "0" * 32,
                "systemUUID": "00000000-0000-0000-0000-000000000001",
                "bootID": "00000000-0000-0000-0000-000000000002",
                "kernelVersion": "6.1.0-sim",
                "osImage": "Simulated Linux",
                "containerRuntimeVersion": "sim://1.0",
                "kubeletVersion": "v1.37.2",
                "kubeProxyVersion": "v1.37.2",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }
