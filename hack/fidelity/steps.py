"""The corpus vocabulary: a Case is a list of Steps, written as data so the corpus reads as a list
of requests rather than as test code.

Strings in a step (path, body) are templates: `{ns}` is the case's namespace, `{run}` the run's
id (for cluster-scoped names), and `{name}` any value an earlier step saved with `save=`. Each
server keeps its own saved values, so a uid saved from one server is only sent back to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

JSON = "application/json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
ACJOB_GV = "/apis/mindxdl.gitee.com/v1"


@dataclass(frozen=True)
class Until:
    """Poll a GET until a condition holds: the answer's `code`, or a field present/absent/equal.

    Garbage collection and namespace cleanup happen after the request that causes them, on
    both servers; polling compares where they end up, not how fast they get there.
    """

    code: int | None = None
    has: str = ""  # a dotted path that must be present
    lacks: str = ""  # a dotted path that must be absent
    equals: tuple[str, Any] | None = None
    timeout: float = 45.0


@dataclass(frozen=True)
class Step:
    """One request (or watch action); `pick` narrows the comparison to some paths."""

    method: str
    path: str
    body: Any = None
    content_type: str = JSON
    accept: str = JSON
    raw: bytes | None = None  # a body sent as-is (malformed input)
    save: dict[str, str] = field(default_factory=dict)  # var -> dotted path in the answer
    pick: tuple[str, ...] = ()
    until: Until | None = None
    headers: tuple[str, ...] = ()  # response headers to compare too
    watch: str = ""  # watch id: method WATCH opens it, COLLECT reads and closes it
    count: int = 0  # COLLECT: how many events to wait for
    wait: float = 0.0  # COLLECT: how long to wait for them; SLEEP: how long to sleep
    compare: bool = True  # False: a preparation step whose answer is not scored

    def describe(self) -> str:
        if self.method == "COLLECT":
            return f"COLLECT watch {self.watch} ({self.count} events)"
        if self.method == "SLEEP":
            return f"SLEEP {self.wait}s"
        extra = ""
        if self.content_type != JSON and self.method in ("PATCH", "POST", "PUT"):
            extra = f" [{self.content_type}]"
        if self.accept != JSON:
            extra += " [Table]" if "Table" in self.accept else f" [{self.accept}]"
        return f"{self.method} {self.path}{extra}"


@dataclass(frozen=True)
class Case:
    """Independent of every other case: it gets its own namespace on each server."""

    name: str
    steps: tuple[Step, ...]
    namespace: bool = True  # create the case's namespace first (and wait for its account)
    area: str = ""


def case(name: str, *steps: Step, namespace: bool = True) -> Case:
    return Case(name, tuple(steps), namespace)


# --- step constructors -----------------------------------------------------------------------


def ns_path(resource: str, group_version: str = "/api/v1") -> str:
    """`pods/x` -> `/api/v1/namespaces/{ns}/pods/x`; absolute paths are kept."""
    if resource.startswith("/"):
        return resource
    return f"{group_version}/namespaces/{{ns}}/{resource}"


def get(path: str, **kw: Any) -> Step:
    return Step("GET", ns_path(path), **kw)


def post(path: str, body: Any, **kw: Any) -> Step:
    return Step("POST", ns_path(path), body, **kw)


def put(path: str, body: Any, **kw: Any) -> Step:
    return Step("PUT", ns_path(path), body, **kw)


def patch(path: str, body: Any, kind: str = "merge", **kw: Any) -> Step:
    return Step("PATCH", ns_path(path), body, content_type=PATCH_TYPES[kind], **kw)


def delete(path: str, body: Any = None, **kw: Any) -> Step:
    return Step("DELETE", ns_path(path), body, **kw)


def table(path: str, **kw: Any) -> Step:
    return Step("GET", ns_path(path), accept=TABLE, **kw)


def wait_for(path: str, until: Until, **kw: Any) -> Step:
    return Step("GET", ns_path(path), until=until, **kw)


def gone(path: str, **kw: Any) -> Step:
    """Poll until the object is gone (404): what GC and namespace cleanup end with."""
    return wait_for(path, Until(code=404), **kw)


def watch(watch_id: str, path: str, **kw: Any) -> Step:
    """Open a watch; its events are read by a later collect(watch_id, ...)."""
    return Step("WATCH", ns_path(path), watch=watch_id, **kw)


def collect(watch_id: str, count: int, wait: float = 10.0) -> Step:
    return Step("COLLECT", "", watch=watch_id, count=count, wait=wait)


def sleep(seconds: float) -> Step:
    return Step("SLEEP", "", wait=seconds, compare=False)


def prep(step: Step) -> Step:
    """The same step, not scored (setup whose answer another step already checks)."""
    return replace(step, compare=False)


def acj(resource: str) -> str:
    """A path under the AscendJob API group, in the case's namespace."""
    return ns_path(resource, ACJOB_GV)
