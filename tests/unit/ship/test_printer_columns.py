"""The AscendJob CRD's printer columns: the default four, and the priority-1 ones of `-o wide`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml


def crd_version(repo_root: Path) -> dict[str, Any]:
    crd = yaml.safe_load(
        (repo_root / "manifests/crd/mindxdl.gitee.com_ascendjobs.yaml").read_text()
    )
    [version] = crd["spec"]["versions"]
    return dict(version)


def schema_at(schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The schema node a simple JSONPath (`.a.b[-1:].c`) selects, None when undeclared."""
    node: dict[str, Any] | None = schema
    for step in re.findall(r"\.([A-Za-z0-9_-]+)|\[[^\]]*\]", path):
        if node is None:
            return None
        if not step:  # an index or slice
            node = node.get("items")
            continue
        if step in node.get("properties", {}):
            node = node["properties"][step]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]  # a map: the key (a replica type) is free
        else:
            return None
    return node


def test_columns_and_priorities(repo_root: Path) -> None:
    columns = crd_version(repo_root)["additionalPrinterColumns"]
    shown = [(c["name"], c.get("priority", 0)) for c in columns]
    assert shown == [
        ("Status", 0),
        ("Age", 0),
        ("Restarts", 0),
        ("Framework", 1),
        ("Reason", 1),
        ("Workers", 1),
        ("Active", 1),
    ]
    paths = {c["name"]: c["jsonPath"] for c in columns}
    assert paths["Framework"] == ".metadata.labels.framework"
    assert paths["Reason"] == ".status.conditions[-1:].reason"
    for column in columns:
        assert column["type"] in ("string", "integer", "date"), column
        assert column["jsonPath"].startswith("."), column  # the API server's rule


def test_every_status_and_spec_path_is_declared(repo_root: Path) -> None:
    version = crd_version(repo_root)
    schema = version["schema"]["openAPIV3Schema"]
    for column in version["additionalPrinterColumns"]:
        path = column["jsonPath"]
        if path.startswith(".metadata"):
            continue
        node = schema_at(schema, path)
        assert node is not None, path
        want = {"integer": "integer", "string": "string", "date": "string"}[column["type"]]
        assert node.get("type") == want, (path, node)
    assert schema_at(schema, ".status.replicaStatuses.Worker.activ") is None  # catches typos
