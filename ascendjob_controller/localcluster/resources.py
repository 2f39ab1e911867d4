"""What the embedded API server knows about one kind of resource.

This is the contract between the server (routing, storage) and the pure helpers that
describe resources to clients (discovery, OpenAPI, Tables, schema validation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: frozenset[str] = frozenset()  # e.g. {"status"}
    # For custom resources: the version's openAPIV3Schema and additionalPrinterColumns.
    schema: dict[str, Any] | None = None
    printer_columns: tuple[dict[str, Any], ...] = ()
    categories: tuple[str, ...] = ()
    builtin: bool = True  # built-in kinds get strategic merge patch; custom ones do not
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def group_resource(self) -> str:
        """`pods`, `ascendjobs.mindxdl.gitee.com`: the name used in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural
