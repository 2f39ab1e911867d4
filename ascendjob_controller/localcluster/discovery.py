"""Discovery documents (`/api`, `/apis`, `/apis/<g>/<v>`, aggregated v2) built from ResourceTypes.

kubectl resolves `kubectl get acjob` through these: short names, singular names, verbs and
scope all come from here, so everything is derived from the one registry the server routes
with and can never disagree with it. Pure functions: the server calls them per request.

kubectl 1.32 first asks `/api` and `/apis` for the aggregated form
(`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`) and only
falls back to the legacy per-group-version lists when that fails; both are served.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from typing import Any

from ascendjob_controller.localcluster.resources import ResourceType

# Verbs of the subresources we know; anything else is served with get/patch/update.
_SUBRESOURCE_VERBS: dict[str, tuple[str, ...]] = {
    "status": ("get", "patch", "update"),
    "finalize": ("update",),
    "scale": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "log": ("get",),
}
_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes' version order: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > foo."""
    m = _VERSION_RE.match(version)
    if not m:
        return (0, 0, 0, version)
    major, stage, minor = m.group(1), m.group(2), m.group(3)
    stage_rank = {None: 3, "beta": 2, "alpha": 1}[stage]
    return (stage_rank, int(major), int(minor or 0), "")


def _preferred(versions: Iterable[str]) -> str:
    return max(versions, key=version_priority)


def api_versions(server_address: str = "127.0.0.1:6443") -> dict[str, Any]:
    """The legacy `/api` document: the core group only has v1."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _groups(resources: Iterable[ResourceType]) -> dict[str, list[str]]:
    """Named groups (not core) in first-seen order, each with its versions, preferred first."""
    groups: dict[str, list[str]] = {}
    for rt in resources:
        if not rt.group:
            continue
        versions = groups.setdefault(rt.group, [])
        if rt.version not in versions:
            versions.append(rt.version)
    for group, versions in groups.items():
        groups[group] = sorted(versions, key=version_priority, reverse=True)
    return groups


def api_group_list(resources: Iterable[ResourceType]) -> dict[str, Any]:
    """The `/apis` document."""
    out: list[dict[str, Any]] = []
    for group, versions in _groups(resources).items():
        preferred = _preferred(versions)
        out.append(
            {
                "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred},
            }
        )
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def _resource_entry(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if not rt.builtin:
        entry["storageVersionHash"] = storage_version_hash(rt)
    return entry


def storage_version_hash(rt: ResourceType) -> str:
    """kube-apiserver's hash of group/version/kind (discovery's storageVersionHash)."""
    digest = hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


# Subresources answering with another kind than their resource's.
_SUBRESOURCE_KINDS = {"binding": "Binding", "eviction": "Eviction"}


def _subresource_entry(rt: ResourceType, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{rt.plural}/{sub}",
        "singularName": "",
        "namespaced": rt.namespaced,
        "kind": _SUBRESOURCE_KINDS.get(sub, rt.kind),
        "verbs": list(_SUBRESOURCE_VERBS.get(sub, ("get", "patch", "update"))),
    }
    if sub == "scale":
        entry.update(kind="Scale", group="autoscaling", version="v1")
    return entry


def api_resource_list(
    group_version: str, resources: Iterable[ResourceType]
) -> dict[str, Any] | None:
    """`/api/v1` or `/apis/<group>/<version>`; None when nothing is served there (404)."""
    matching = [rt for rt in resources if rt.group_version == group_version]
    if not matching:
        return None
    entries: list[dict[str, Any]] = []
    for rt in sorted(matching, key=lambda r: r.plural):
        entries.append(_resource_entry(rt))
        for sub in sorted(rt.subresources):
            entries.append(_subresource_entry(rt, sub))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": "", "version": "", "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs = []
    for sub in sorted(rt.subresources):
        kind = (
            {"group": "autoscaling", "version": "v1", "kind": "Scale"}
            if sub == "scale"
            else {
                "group": "",
                "version": "",
                "kind": _SUBRESOURCE_KINDS.get(sub, rt.kind),
            }
        )
        subs.append(
            {
                "subresource": sub,
                "responseKind": kind,
                "verbs": list(_SUBRESOURCE_VERBS.get(sub, ("get", "patch", "update"))),
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated_discovery(resources: Iterable[ResourceType], legacy: bool) -> dict[str, Any]:
    """apidiscovery.k8s.io/v2 APIGroupDiscoveryList: `/api` when legacy, else `/apis`."""
    resources = list(resources)
    items: list[dict[str, Any]] = []
    if legacy:
        core = [rt for rt in resources if not rt.group and rt.version == "v1"]
        items.append(
            {
                "metadata": {"creationTimestamp": None},
                "versions": [
                    {
                        "version": "v1",
                        "resources": [
                            _aggregated_resource(rt) for rt in sorted(core, key=lambda r: r.plural)
                        ],
                        "freshness": "Current",
                    }
                ],
            }
        )
    else:
        for group, versions in _groups(resources).items():
            # Preferred version first: that is how clients pick the default version.
            preferred = _preferred(versions)
            ordered = [preferred] + [v for v in versions if v != preferred]
            items.append(
                {
                    "metadata": {"name": group, "creationTimestamp": None},
                    "versions": [
                        {
                            "version": v,
                            "resources": [
                                _aggregated_resource(rt)
                                for rt in sorted(resources, key=lambda r: r.plural)
                                if rt.group == group and rt.version == v
                            ],
                            "freshness": "Current",
                        }
                        for v in ordered
                    ],
                }
            )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
