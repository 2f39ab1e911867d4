"""Replace what legitimately differs between two servers by stable placeholders.

One Normalizer per case and server, fed that server's answers in order, so a value keeps its
placeholder across the case: the uid first seen is `<uid:1>` on both sides, and an
ownerReference naming it later says `<uid:1>` too. Only the pattern of equalities survives,
which is what a client can rely on:
- uids, object resourceVersions and IPs (cluster IPs, pod IPs): numbered in order of
  appearance; a list's own resourceVersion and continue tokens are opaque (`<list-rv>`);
- timestamps (RFC 3339, with or without fractions) and Table age cells;
- names made from generateName (also where a message quotes them), and the random suffix
  of `kube-api-access-xxxxx`;
- numbers quoted from resourceVersions inside messages ("too old resource version: 1 (456)");
- the Go version the server was built with (`/version` goVersion);
- the order of a 422's causes (`in_cause_order`): kube-openapi's is random.
"""

from __future__ import annotations

import re
from typing import Any

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
# A timestamp or resourceVersion inside a longer text: an object quoted as JSON in a message
# (the patcher's Strict 422 quotes the whole patched object).
_TIME_IN_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_RV_IN_QUOTED_JSON = re.compile(r'(resourceVersion\\+":\\+")(\d+)')
_IPV4 = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")
_API_ACCESS = re.compile(r"kube-api-access-[a-z0-9]{5}")
_TOO_OLD = re.compile(r"too old resource version: (\d+) \((\d+)\)")
_PRECONDITION_RV = (
    re.compile(
        r"(ResourceVersion in precondition: )(\d+)(, ResourceVersion in object meta: )(\d+)"
    ),
    re.compile(
        r"(the ResourceVersion in the precondition \()(\d+)"
        r"(\) does not match the ResourceVersion in record \()(\d+)"
    ),
)
_AGE_COLUMNS = {"Age", "Last Seen", "First Seen"}
_LIST_KINDS_SUFFIX = ("List",)


class Normalizer:
    def __init__(self, generate_names: set[str]) -> None:
        self.generate_names = sorted(generate_names, key=len, reverse=True)
        self._maps: dict[str, dict[str, str]] = {"uid": {}, "rv": {}, "ip": {}, "gen": {}}

    def _placeholder(self, kind: str, value: str) -> str:
        table = self._maps[kind]
        if value not in table:
            table[value] = f"<{kind}:{len(table) + 1}>"
        return table[value]

    def normalize(self, value: Any) -> Any:
        """A normalized deep copy of an answer body (or a list of watch events)."""
        return self._value(value, parent_key="")

    def _value(self, value: Any, parent_key: str) -> Any:
        if isinstance(value, dict):
            return self._dict(value)
        if isinstance(value, list):
            return [self._value(v, parent_key) for v in value]
        if isinstance(value, str):
            return self._string(value, parent_key)
        return value

    def _dict(self, value: dict[str, Any]) -> dict[str, Any]:
        kind = value.get("kind")
        if kind == "Status":
            value = in_cause_order(value)
        is_list = isinstance(kind, str) and (kind.endswith(_LIST_KINDS_SUFFIX) or kind == "Table")
        if value.get("type") == "BOOKMARK" and isinstance(value.get("object"), dict):
            # A bookmark's resourceVersion is the server's current one, like a list's.
            obj = dict(value["object"])
            obj["metadata"] = self._list_meta(obj.get("metadata") or {})
            return {**value, "object": self._value(obj, "object")}
        out: dict[str, Any] = {}
        # Sorted: placeholders are numbered by first appearance, and two servers need not
        # serialize a map's keys in the same order.
        for key, child in sorted(value.items(), key=lambda kv: str(kv[0])):
            nkey = self._string(key, "") if isinstance(key, str) else key
            if key == "metadata" and is_list and isinstance(child, dict):
                out[nkey] = self._list_meta(child)
            elif key == "resourceVersion" and isinstance(child, str) and child.isdigit():
                out[nkey] = self._placeholder("rv", child)
            elif key == "continue" and isinstance(child, str) and child:
                out[nkey] = "<continue>"
            elif key == "goVersion" and isinstance(child, str):
                out[nkey] = "<go-version>"
            else:
                out[nkey] = self._value(child, key)
        if kind == "Table":
            self._table_ages(out)
        return out

    def _list_meta(self, meta: dict[str, Any]) -> dict[str, Any]:
        out = dict(meta)
        if "resourceVersion" in out:
            out["resourceVersion"] = "<list-rv>"
        if out.get("continue"):
            out["continue"] = "<continue>"
        return out

    def _string(self, value: str, parent_key: str) -> str:
        if _TIME.match(value):
            return "<time>"
        ip = _IPV4.match(value)
        if ip and all(int(p) < 256 for p in ip.groups()) and value != "127.0.0.1":
            return self._placeholder("ip", value)
        for prefix in self.generate_names:
            if value.startswith(prefix) and re.fullmatch(r"[a-z0-9]{5}", value[len(prefix) :]):
                return prefix + self._placeholder("gen", value)
            if prefix in value:  # quoted in a message ("Bad_x7k2p" is invalid: ...)
                value = re.sub(
                    re.escape(prefix) + r"[a-z0-9]{5}(?![a-z0-9])",
                    lambda m, p=prefix: p + self._placeholder("gen", m.group(0)),
                    value,
                )
        value = _UUID.sub(lambda m: self._placeholder("uid", m.group(0)), value)
        value = _TIME_IN_TEXT.sub("<time>", value)
        value = _RV_IN_QUOTED_JSON.sub(
            lambda m: m.group(1) + self._placeholder("rv", m.group(2)), value
        )
        value = _API_ACCESS.sub("kube-api-access-<gen>", value)
        value = _TOO_OLD.sub(r"too old resource version: \1 (<rv>)", value)
        for pattern in _PRECONDITION_RV:
            value = pattern.sub(
                lambda m: (
                    m.group(1)
                    + self._placeholder("rv", m.group(2))
                    + m.group(3)
                    + self._placeholder("rv", m.group(4))
                ),
                value,
            )
        return value

    @staticmethod
    def _table_ages(table: dict[str, Any]) -> None:
        columns = table.get("columnDefinitions") or []
        ages = [
            i
            for i, c in enumerate(columns)
            if isinstance(c, dict) and (c.get("name") in _AGE_COLUMNS or c.get("type") == "date")
        ]
        for row in table.get("rows") or []:
            cells = row.get("cells") if isinstance(row, dict) else None
            if isinstance(cells, list):
                for i in ages:
                    if i < len(cells) and isinstance(cells[i], str):
                        cells[i] = "<age>"


def in_cause_order(status: dict[str, Any]) -> dict[str, Any]:
    """A 422's causes sorted, and its message rebuilt in that order.

    kube-openapi walks an object's properties in Go's random map order, so the same invalid
    custom resource lists its schema causes in a different order from one request to the
    next. Only which causes there are can be compared. The message is rebuilt only when it
    is exactly the aggregate of the causes (`<Kind> "<name>" is invalid: [field: message,
    ...]`); any other difference is left for the comparison to show.
    """
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    message = status.get("message")
    if not isinstance(causes, list) or len(causes) < 2 or not isinstance(message, str):
        return status
    if not all(isinstance(c, dict) for c in causes):
        return status
    head, sep, _ = message.partition(" is invalid: [")
    listed = ", ".join(f"{c.get('field')}: {c.get('message')}" for c in causes)
    if not sep or message != f"{head}{sep}{listed}]":
        return status
    ordered = sorted(causes, key=lambda c: (str(c.get("field")), str(c.get("message"))))
    rebuilt = ", ".join(f"{c.get('field')}: {c.get('message')}" for c in ordered)
    return {
        **status,
        "message": f"{head}{sep}{rebuilt}]",
        "details": {**details, "causes": ordered},
    }


def generate_names(bodies: list[Any]) -> set[str]:
    """Every `generateName` a case's request bodies use (their results are random names)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            name = value.get("generateName")
            if isinstance(name, str) and name:
                found.add(name)
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    for body in bodies:
        walk(body)
    return found
