"""A tiny in-memory API server for plan() tests: it executes plans the way the reconciler
will, and the test plays kubelet by editing pod status."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ascendjob_controller.job.desired import owner_reference
from ascendjob_controller.job.plan import Plan, PlanOptions, plan
from ascendjob_controller.job.types import format_time, parse_job
from ascendjob_controller.job.validation import Problem

from .factories import T0, materialise, set_phase


@dataclass
class World:
    job: dict[str, Any]
    now: datetime = T0
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    podgroup: dict[str, Any] | None = None
    options: PlanOptions = field(default_factory=PlanOptions)
    job_deleted: bool = False
    #: Deletes leave the pod Terminating instead of removing it at once.
    slow_deletes: bool = False
    history: list[Plan] = field(default_factory=list)
    #: What the reconciler passes after the API server refused a create as invalid.
    refused: Problem | None = None

    def plan(self) -> Plan:
        return plan(
            self.job,
            list(self.pods.values()),
            list(self.services.values()),
            self.podgroup,
            self.now,
            self.options,
            refused=self.refused,
        )

    def reconcile(self) -> Plan:
        """Plan and execute (adopts, status, deletes and deletes_after_status, force deletes,
        creates, TTL).

        A pod deleted here is gone at once (unless `slow_deletes`), so the next reconcile is
        the follow-up plan the reconciler makes in the same reconcile after such a delete.
        """
        snapshot = copy.deepcopy((self.job, self.pods, self.services, self.podgroup))
        result = self.plan()
        assert snapshot == (self.job, self.pods, self.services, self.podgroup), "inputs mutated"
        self.history.append(result)
        view = parse_job(self.job) if result.adopts else None
        for ref in result.adopts:
            store = {"Pod": self.pods, "Service": self.services}.get(ref.kind)
            target = store[ref.name] if store is not None else self.podgroup
            assert target is not None and view is not None
            target["metadata"].setdefault("ownerReferences", []).append(owner_reference(view))
        if result.status is not None:
            self.job["status"] = copy.deepcopy(result.status)
        # Record, then act: the status that counts these restarts is stored by now.
        for ref in (*result.deletes, *result.deletes_after_status):
            if ref.kind == "Pod":
                if self.slow_deletes:
                    self.pods[ref.name]["metadata"]["deletionTimestamp"] = format_time(self.now)
                else:
                    del self.pods[ref.name]
            elif ref.kind == "Service":
                del self.services[ref.name]
            else:
                self.podgroup = None
        for ref in result.force_deletes:
            del self.pods[ref.name]
        for body in result.creates:
            obj = materialise(body)
            name = obj["metadata"]["name"]
            if obj["kind"] == "Pod":
                assert name not in self.pods, f"duplicate create of {name}"
                self.pods[name] = obj
            elif obj["kind"] == "Service":
                self.services[name] = obj
            else:
                self.podgroup = obj
        if result.podgroup_patch is not None:
            assert self.podgroup is not None, "patch planned for a missing PodGroup"
            self.podgroup = copy.deepcopy(self.podgroup)
            self.podgroup["spec"].update(copy.deepcopy(result.podgroup_patch["spec"]))
        if result.delete_job:
            self.job_deleted = True
        return result

    # --- kubelet -------------------------------------------------------------------------
    def kubelet(self, name: str, phase: str, code: int | None = None, restarts: int = 0) -> None:
        self.pods[name] = set_phase(self.pods[name], phase, code, restarts)

    def all_pods(self, phase: str, code: int | None = None) -> None:
        for name in list(self.pods):
            self.kubelet(name, phase, code)

    def admit_podgroup(self, phase: str = "Inqueue") -> None:
        assert self.podgroup is not None
        self.podgroup = {**self.podgroup, "status": {"phase": phase}}

    @property
    def state(self) -> str | None:
        conditions = (self.job.get("status") or {}).get("conditions") or []
        return conditions[-1]["type"] if conditions else None

    @property
    def condition(self) -> dict[str, Any]:
        return dict(self.job["status"]["conditions"][-1])

    def settle(self, limit: int = 5) -> Plan:
        """Reconcile until a plan does nothing; returns that idle plan."""
        for _ in range(limit):
            result = self.reconcile()
            busy = result.creates or result.deletes or result.status or result.adopts
            busy = busy or result.deletes_after_status
            if not (busy or result.podgroup_patch):
                return result
        raise AssertionError("plan did not settle")
