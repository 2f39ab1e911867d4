"""Spec validation: what the CRD schema cannot express (design section 4, "Validation").

The schema already rejects structural errors (a string for `replicas`); this module catches the
semantic ones and names each with the reason the user sees in the `Failed` condition message
(`<Reason>: <text>`) and in the Warning Event. Problems are returned, never raised, so the
caller can report all of them; the first one is the one shown in the condition.

A job with an unknown framework cannot be checked further (the replica types depend on it), so
that problem is returned alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ascendjob_controller.job.types import (
    LEADER_REQUIRED,
    LEADERS,
    MAX_REPLICAS,
    RESTART_POLICIES,
    SUCCESS_POLICIES,
    as_int,
    canonical_rtype,
    dig,
    framework_of,
)

INVALID_FRAMEWORK = "InvalidFramework"
INVALID_SPECS = "InvalidSpecs"
INVALID_REPLICA_TYPE = "InvalidReplicaType"
INVALID_REPLICA_SPEC = "InvalidReplicaSpec"
INVALID_CONTAINER = "InvalidContainer"
INVALID_SUCCESS_POLICY = "InvalidSuccessPolicy"
INVALID_RESTART_POLICY = "InvalidRestartPolicy"
INVALID_LEADER = "InvalidLeader"


@dataclass(frozen=True)
class Problem:
    """One validation failure: a CamelCase reason and a human sentence."""

    reason: str
    text: str

    @property
    def message(self) -> str:
        return f"{self.reason}: {self.text}"


def validate(job: dict[str, Any]) -> list[Problem]:
    """Return every problem found in the job's spec, in a stable order; [] when valid."""
    framework = framework_of(job)
    if framework not in LEADERS:
        raw = dig(job, "metadata", "labels", "framework")
        what = "missing" if raw is None else f"{raw!r} is not one of {sorted(LEADERS)}"
        return [Problem(INVALID_FRAMEWORK, f"label 'framework' is {what}")]

    problems: list[Problem] = []
    success = dig(job, "spec", "successPolicy")
    if success is not None and success not in SUCCESS_POLICIES:
        problems.append(
            Problem(INVALID_SUCCESS_POLICY, f"successPolicy {success!r} is not '' or 'AllWorkers'")
        )

    specs = dig(job, "spec", "replicaSpecs")
    if not isinstance(specs, dict) or not specs:
        problems.append(Problem(INVALID_SPECS, "spec.replicaSpecs is empty"))
        return problems

    leader = LEADERS[framework]
    seen: set[str] = set()
    for key in sorted(specs):
        rtype = canonical_rtype(framework, key)
        if rtype is None:
            allowed = f"{leader} or Worker"
            problems.append(
                Problem(
                    INVALID_REPLICA_TYPE,
                    f"replica type {key!r} is not valid for {framework} (want {allowed})",
                )
            )
            continue
        if rtype in seen:
            problems.append(
                Problem(INVALID_REPLICA_TYPE, f"replica type {rtype} is given more than once")
            )
            continue
        seen.add(rtype)
        problems.extend(_check_replica(rtype, rtype == leader, specs[key]))

    if framework in LEADER_REQUIRED and leader not in seen:
        problems.append(Problem(INVALID_LEADER, f"a {framework} job needs a {leader} replica"))
    return problems


def _check_replica(rtype: str, is_leader: bool, spec: Any) -> list[Problem]:
    if not isinstance(spec, dict):
        return [Problem(INVALID_REPLICA_SPEC, f"{rtype}: the replica spec is not an object")]
    problems: list[Problem] = []
    raw_replicas = spec.get("replicas")
    replicas = 1 if raw_replicas is None else as_int(raw_replicas)
    if replicas is None or not 0 <= replicas <= MAX_REPLICAS:
        problems.append(
            Problem(
                INVALID_REPLICA_SPEC,
                f"{rtype}: replicas {raw_replicas!r} is outside 0..{MAX_REPLICAS}",
            )
        )
    elif is_leader and replicas != 1:
        problems.append(
            Problem(INVALID_REPLICA_SPEC, f"{rtype}: the leader needs replicas 1, not {replicas}")
        )

    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        problems.append(
            Problem(
                INVALID_RESTART_POLICY,
                f"{rtype}: restartPolicy {policy!r} is not one of {', '.join(RESTART_POLICIES)}",
            )
        )

    containers = dig(spec, "template", "spec", "containers")
    if not isinstance(containers, list) or not containers:
        problems.append(Problem(INVALID_REPLICA_SPEC, f"{rtype}: the template has no containers"))
        return problems
    # Every container needs an image: a pod with an image-less container is rejected by the
    # API server, which would only surface later as an endless FailedCreatePod.
    for container in containers:
        if not isinstance(container, dict) or not container.get("image"):
            name = container.get("name") if isinstance(container, dict) else None
            problems.append(Problem(INVALID_CONTAINER, f"{rtype}: container {name!r} has no image"))
            break
    return problems
