"""Write the local cluster's table of built-in fields from a real kube-apiserver's OpenAPI v3.

The real server drops the fields a built-in kind does not have (a Warning, or a 400 under
`fieldValidation=Strict`), because it decodes the body into the kind's Go struct. The local
cluster has no Go structs; it reads the same field list from
`ascendjob_controller/localcluster/builtin_fields.json`, which this script writes: for every
built-in kind the local cluster serves, the fields of each struct the kind is made of, as the
server's own OpenAPI v3 document publishes them.

    .venv/bin/python hack/gen_builtin_fields.py           # start a real server, (re)write
    .venv/bin/python hack/gen_builtin_fields.py --check   # exit 1 when the file differs

Needs `make real-cluster-bin`. The real lane runs `--check`
(tests/integration/localcluster/test_builtin_fields_table.py), so a new server version that
adds a field is noticed.

The table's shapes (`builtin_fields.py` reads them):
- `0`: a value whose inside is not checked (a scalar, a Quantity, a Time, an IntOrString,
  a RawExtension, fieldsV1, anything marked `x-kubernetes-preserve-unknown-fields`);
- a string: a struct, by its OpenAPI name in `types`;
- `["l", shape]`: a list of shape; `["m", shape]`: a map of shape.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ascendjob_controller.localcluster import builtin  # noqa: E402
from ascendjob_controller.localcluster.builtin_fields import TABLE_PATH  # noqa: E402
from ascendjob_controller.localcluster.resources import ResourceType  # noqa: E402

Shape = Any


def served_kinds() -> list[ResourceType]:
    """Every built-in kind the local cluster serves, once each."""
    seen: dict[tuple[str, str, str], ResourceType] = {}
    for value in vars(builtin).values():
        if isinstance(value, ResourceType) and value.builtin:
            seen[(value.group, value.version, value.kind)] = value
    return sorted(seen.values(), key=lambda rt: (rt.group, rt.version, rt.kind))


class Converter:
    """OpenAPI v3 schemas -> the table's shapes; structs are named once, recursion allowed."""

    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas
        self.types: dict[str, dict[str, Shape]] = {}

    def named(self, ref: str) -> Shape:
        name = ref.rsplit("/", 1)[-1]
        schema = self.schemas[name]
        if "properties" not in schema:
            return self.shape(schema)
        if name not in self.types:
            self.types[name] = {}  # placeholder first: a struct may contain itself
            self.types[name] = {
                field: self.shape(sub) for field, sub in sorted(schema["properties"].items())
            }
        return name

    def shape(self, schema: dict[str, Any]) -> Shape:
        if "$ref" in schema:
            return self.named(schema["$ref"])
        refs = [part["$ref"] for part in schema.get("allOf", ()) if "$ref" in part]
        if refs:
            return self.named(refs[0])
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return 0
        if schema.get("type") == "array":
            return ["l", self.shape(schema.get("items") or {})]
        extra = schema.get("additionalProperties")
        if schema.get("type") == "object" and isinstance(extra, dict):
            return ["m", self.shape(extra)]
        if "properties" in schema:
            raise SystemExit(f"an inline struct the table cannot name: {sorted(schema)}")
        return 0


def _gvk_matches(schema: dict[str, Any], rt: ResourceType) -> bool:
    return any(
        (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (rt.group, rt.version, rt.kind)
        for gvk in schema.get("x-kubernetes-group-version-kind") or ()
    )


def build_table(get: Any) -> dict[str, Any]:
    """The table, from `get(path) -> (code, body)` against a real server."""
    code, raw = get("/openapi/v3")
    assert code == 200, (code, raw[:200])
    paths = json.loads(raw)["paths"]
    version = json.loads(get("/version")[1])["gitVersion"]
    kinds: dict[str, str] = {}
    converter: Converter | None = None
    by_gv: dict[str, dict[str, Any]] = {}
    for rt in served_kinds():
        prefix = f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"
        if prefix not in by_gv:
            code, raw = get("/" + paths[prefix]["serverRelativeURL"].lstrip("/"))
            assert code == 200, (prefix, code)
            by_gv[prefix] = json.loads(raw)["components"]["schemas"]
        schemas = by_gv[prefix]
        names = [name for name, schema in schemas.items() if _gvk_matches(schema, rt)]
        if len(names) != 1:
            raise SystemExit(f"{rt.kind}: {len(names)} schemas name it")
        converter = Converter(schemas) if converter is None else converter
        converter.schemas = {**converter.schemas, **schemas}
        kinds[f"{rt.group_version}/{rt.kind}"] = converter.named(names[0])
    assert converter is not None
    return {
        "source": f"kube-apiserver {version} /openapi/v3",
        "kinds": kinds,
        "types": converter.types,
    }


def render(table: dict[str, Any]) -> str:
    """One line per kind and per struct, so a new server version's diff reads field by field."""
    lines = ["{", f'"source": {json.dumps(table["source"])},', '"kinds": {']
    kinds = sorted(table["kinds"].items())
    lines += [f"{json.dumps(k)}: {json.dumps(v)}," for k, v in kinds]
    lines[-1] = lines[-1].rstrip(",")
    lines += ["},", '"types": {']
    types = sorted(table["types"].items())
    lines += [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}," for k, v in types]
    lines[-1] = lines[-1].rstrip(",")
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on a change")
    args = parser.parse_args(argv)
    from ascendjob_controller.localcluster.realcluster import RealCluster

    with (
        tempfile.TemporaryDirectory() as tmp,
        RealCluster(Path(tmp) / "kubeconfig", kubelet=False, crd_dir=None) as cluster,
    ):
        text = render(build_table(cluster.get))
    if args.check:
        same = TABLE_PATH.read_text() == text
        print(f"{TABLE_PATH.name}: {'up to date' if same else 'differs from the server'}")
        return 0 if same else 1
    TABLE_PATH.write_text(text)
    print(f"wrote {TABLE_PATH} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
