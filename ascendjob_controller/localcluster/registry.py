"""Which resource types are served, built-in ones plus those each CRD declares.

CRDs come and go at run time, so lookups go through this one table; the HTTP layer and the
discovery/OpenAPI helpers all read from it and therefore always agree.
"""

from __future__ import annotations

import threading
from typing import Any

from ascendjob_controller.localcluster.builtin import BUILTIN_TYPES
from ascendjob_controller.localcluster.resources import ResourceType

# The order apiextensions-apiserver lists a custom resource's verbs in.
CUSTOM_RESOURCE_VERBS = (
    "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch",
)  # fmt: skip


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """One ResourceType per served version of a CRD (pure)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        subresources = frozenset((version.get("subresources") or {}).keys())
        out.append(
            ResourceType(
                group=group,
                version=version["name"],
                kind=names.get("kind", ""),
                plural=names.get("plural", ""),
                singular=names.get("singular") or str(names.get("kind", "")).lower(),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=subresources,
                schema=schema,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                categories=tuple(names.get("categories") or ()),
                builtin=False,
                verbs=CUSTOM_RESOURCE_VERBS,
                extra={"crd": crd["metadata"]["name"], "storage": bool(version.get("storage"))},
            )
        )
    return out


class Registry:
    """Resource types by (group, version, plural); custom ones keyed by their CRD's name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builtin: dict[tuple[str, str, str], ResourceType] = {
            (t.group, t.version, t.plural): t for t in BUILTIN_TYPES
        }
        self._custom: dict[str, list[ResourceType]] = {}
        self._table: dict[tuple[str, str, str], ResourceType] = dict(self._builtin)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._table.get((group, version, plural))

    def by_group_resource(self, group_resource: str) -> ResourceType | None:
        """A served type for `pods` / `ascendjobs.mindxdl.gitee.com` (storage version first)."""
        plural, _, group = group_resource.partition(".")
        candidates = [t for t in self.all() if t.plural == plural and t.group == group]
        candidates.sort(key=lambda t: not t.extra.get("storage", True))
        return candidates[0] if candidates else None

    def all(self) -> list[ResourceType]:
        return list(self._table.values())

    def set_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        types = types_from_crd(crd)
        with self._lock:
            self._custom[crd["metadata"]["name"]] = types
            self._rebuild()
        return types

    def remove_crd(self, name: str) -> None:
        with self._lock:
            self._custom.pop(name, None)
            self._rebuild()

    def _rebuild(self) -> None:
        table = dict(self._builtin)
        for types in self._custom.values():
            for t in types:
                table.setdefault((t.group, t.version, t.plural), t)
        self._table = table  # swapped whole, so lock-free readers see old or new, never half
