"""Background garbage collection by ownerReferences, and namespace cleanup.

Like kube-controller-manager's garbage collector, this runs after the fact: a deleted owner's
dependents disappear shortly afterwards (not in the same request), a Foreground deletion waits
for its dependents before the owner goes, and a terminating namespace is emptied and removed.
It works on the store in-process through the same verbs the HTTP server uses.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections import Counter
from typing import Any

from ascendjob_controller.localcluster import builtin
from ascendjob_controller.localcluster.deletion import FOREGROUND, ORPHAN, DeleteOptions
from ascendjob_controller.localcluster.errors import ApiError
from ascendjob_controller.localcluster.store import Event
from ascendjob_controller.localcluster.timestamps import now_rfc3339
from ascendjob_controller.localcluster.verbs import Api

Task = tuple[str, str]  # (what, argument): ("owner-gone", uid), ("foreground", uid), ...


def tasks_for(event: Event, namespace_terminating: bool) -> list[Task]:
    """What an event asks the collector to look at (pure; runs under the store lock)."""
    meta = event.entry.obj["metadata"]
    uid = meta.get("uid", "")
    owners = [o.get("uid", "") for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    tasks: list[Task] = []
    if event.type == "DELETED":
        tasks.append(("owner-gone", uid))
        tasks.extend(("foreground", o) for o in owners)
        if event.namespace and namespace_terminating:
            tasks.append(("namespace", event.namespace))
    else:
        if event.type == "ADDED" and owners:
            tasks.append(("dependent", uid))
        if meta.get("deletionTimestamp"):
            if event.resource == builtin.NAMESPACES.group_resource:
                tasks.append(("namespace", meta["name"]))
            elif FOREGROUND in (meta.get("finalizers") or ()):
                tasks.append(("foreground", uid))
            elif ORPHAN in (meta.get("finalizers") or ()):
                tasks.append(("orphan", uid))
    return tasks


class GarbageCollector:
    def __init__(self, api: Api, namespace_delay: float = 1.0) -> None:
        self.api = api
        self.store = api.store
        # Like the namespace controller, start emptying a terminating namespace a moment
        # later: `kubectl delete -k` deletes a namespace and then its contents, and expects
        # to find them.
        self.namespace_delay = namespace_delay
        self._queue: queue.Queue[Task | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._ns_seen: dict[str, float] = {}
        self._timers: set[threading.Timer] = set()
        self._timers_lock = threading.Lock()
        self.store.add_listener(self._on_event)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="localcluster-gc", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._timers_lock:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(timeout=10)
        self._thread = None

    def idle(self) -> bool:
        with self._timers_lock:
            return self._queue.unfinished_tasks == 0 and not self._timers

    def _later(self, delay: float, task: Task) -> None:
        def fire() -> None:
            with self._timers_lock:
                self._timers.discard(timer)
                self._queue.put(task)

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        with self._timers_lock:
            self._timers.add(timer)
        timer.start()

    def _on_event(self, event: Event) -> None:
        terminating = False
        if event.type == "DELETED" and event.namespace:
            ns = self.store.get(builtin.NAMESPACES.group_resource, "", event.namespace)
            terminating = ns is not None and bool(ns.obj["metadata"].get("deletionTimestamp"))
        for task in tasks_for(event, terminating):
            self._queue.put(task)

    def _run(self) -> None:
        while True:
            task = self._queue.get()
            try:
                if task is None:
                    return
                self._process(task)
            except ApiError as err:
                if err.code not in (404, 409):
                    print(f"localcluster gc: {task}: {err.message}", file=sys.stderr)
            except Exception as err:  # the collector must outlive any one bad object
                print(f"localcluster gc: {task}: {err!r}", file=sys.stderr)
            finally:
                self._queue.task_done()

    def _process(self, task: Task) -> None:
        what, arg = task
        if what == "owner-gone":
            for ref in self.store.dependents(arg):
                self._collect_dependent(ref)
        elif what == "dependent":
            found = self.store.by_uid(arg)
            if found is not None:
                self._collect_dependent(found)
        elif what == "foreground":
            self._foreground(arg)
        elif what == "orphan":
            self._orphan(arg)
        elif what == "namespace":
            self._namespace(arg)

    def _rt(self, resource: str) -> Any:
        return self.api.registry.by_group_resource(resource)

    def _collect_dependent(self, ref: tuple[str, str, str]) -> None:
        """Delete a dependent whose owners are all gone; drop dangling refs otherwise."""
        resource, ns, name = ref
        with self.store.lock:
            entry = self.store.get(resource, ns, name)
            rt = self._rt(resource)
            if entry is None or rt is None:
                return
            refs = entry.obj["metadata"].get("ownerReferences") or []
            alive = [r for r in refs if self.store.by_uid(r.get("uid", "")) is not None]
            if len(alive) == len(refs):
                return
            if alive:
                obj = entry.copy()
                obj["metadata"]["ownerReferences"] = alive
                self.store.write(resource, obj, "MODIFIED")
                return
            if entry.obj["metadata"].get("deletionTimestamp"):
                return
            self.api.delete(rt, ns, name, DeleteOptions(propagation="Background"))

    def _foreground(self, uid: str) -> None:
        """Delete a foreground-deleting owner's dependents; release it once none are left."""
        with self.store.lock:
            ref = self.store.by_uid(uid)
            if ref is None:
                return
            resource, ns, name = ref
            entry = self.store.get(resource, ns, name)
            rt = self._rt(resource)
            if entry is None or rt is None:
                return
            meta = entry.obj["metadata"]
            if not meta.get("deletionTimestamp") or FOREGROUND not in (
                meta.get("finalizers") or ()
            ):
                return
            dependents = self.store.dependents(uid)
            for dep_resource, dep_ns, dep_name in dependents:
                dep = self.store.get(dep_resource, dep_ns, dep_name)
                dep_rt = self._rt(dep_resource)
                if dep is None or dep_rt is None or dep.obj["metadata"].get("deletionTimestamp"):
                    continue
                self.api.delete(dep_rt, dep_ns, dep_name, DeleteOptions(propagation="Foreground"))
            if self.store.dependents(uid):
                return
            obj = entry.copy()
            obj["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != FOREGROUND]
            if not obj["metadata"]["finalizers"]:
                del obj["metadata"]["finalizers"]
            self.api.update(rt, ns, name, obj)

    def _orphan(self, uid: str) -> None:
        """Strip an Orphan-deleted owner from its dependents' ownerReferences, then release it."""
        with self.store.lock:
            ref = self.store.by_uid(uid)
            entry = self.store.get(*ref) if ref is not None else None
            rt = self._rt(ref[0]) if ref is not None else None
            if entry is None or rt is None or ref is None:
                return
            meta = entry.obj["metadata"]
            if not meta.get("deletionTimestamp") or ORPHAN not in (meta.get("finalizers") or ()):
                return
            for dependent in self.store.dependents(uid):
                self._drop_owner(dependent, uid)
            owner = entry.copy()
            owner["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != ORPHAN]
            if not owner["metadata"]["finalizers"]:
                del owner["metadata"]["finalizers"]
            self.api.update(rt, ref[1], ref[2], owner)

    def _drop_owner(self, ref: tuple[str, str, str], uid: str) -> None:
        dependent = self.store.get(*ref)
        if dependent is None:
            return
        obj = dependent.copy()
        meta = obj["metadata"]
        refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != uid]
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        self.store.write(ref[0], obj, "MODIFIED")

    def _namespace(self, name: str) -> None:
        """Delete everything in a terminating namespace, then the namespace itself."""
        ns_resource = builtin.NAMESPACES.group_resource
        with self.store.lock:
            entry = self.store.get(ns_resource, "", name)
            if entry is None or not entry.obj["metadata"].get("deletionTimestamp"):
                self._ns_seen.pop(name, None)
                return
            first_seen = self._ns_seen.setdefault(name, time.monotonic())
            wait = first_seen + self.namespace_delay - time.monotonic()
            if wait > 0:
                self._later(wait, ("namespace", name))
                return
            remaining = 0
            for resource in self.store.resources():
                rt = self._rt(resource)
                if rt is None or not rt.namespaced:
                    continue
                for key in self.store.keys(resource, name):
                    remaining += 1
                    obj = self.store.get(resource, *key)
                    if obj is not None and not obj.obj["metadata"].get("deletionTimestamp"):
                        self.api.delete(rt, key[0], key[1], DeleteOptions())
            leftover = [
                (r, obj.obj)
                for r in self.store.resources()
                if (t := self._rt(r)) is not None and t.namespaced
                for key in self.store.keys(r, name)
                if (obj := self.store.get(r, *key)) is not None
            ]
            if remaining == 0 or not leftover:
                self.store.remove(ns_resource, "", name)
                self._ns_seen.pop(name, None)
                return
            self._report_remaining(entry.obj, leftover)

    def _report_remaining(
        self, namespace: dict[str, Any], leftover: list[tuple[str, dict[str, Any]]]
    ) -> None:
        """The namespace controller's status conditions while content waits on finalizers."""
        wanted = namespace_conditions(leftover, now_rfc3339())
        current = (namespace.get("status") or {}).get("conditions") or []

        def strip(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in conditions]

        if strip(current) == strip(wanted):
            return
        obj = json.loads(json.dumps(namespace))
        obj.setdefault("status", {})["conditions"] = wanted
        self.store.write(builtin.NAMESPACES.group_resource, obj, "MODIFIED")


# The namespace controller's conditions that are False once every deletion was attempted.
_SETTLED = (
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
)


def namespace_conditions(
    leftover: list[tuple[str, dict[str, Any]]], now: str
) -> list[dict[str, Any]]:
    """What kube-controller-manager's namespace controller reports about what is left (pure)."""
    by_resource: Counter[str] = Counter()
    by_finalizer: Counter[str] = Counter()
    for resource, obj in leftover:
        plural, _, group = resource.partition(".")
        by_resource[f"{plural}.{group}"] += 1
        for finalizer in obj["metadata"].get("finalizers") or []:
            by_finalizer[finalizer] += 1

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": status,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    resources = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(by_resource.items()))
    conditions = [condition(kind, "False", reason, text) for kind, reason, text in _SETTLED]
    conditions.append(
        condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            f"Some resources are remaining: {resources}",
        )
    )
    if by_finalizer:
        finalizers = ", ".join(
            f"{f} in {n} resource instances" for f, n in sorted(by_finalizer.items())
        )
        message = f"Some content in the namespace has finalizers remaining: {finalizers}"
        conditions.append(
            condition("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", message)
        )
    return conditions
