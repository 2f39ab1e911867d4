"""Spec validation: what the CRD schema cannot express (design section 4, "Validation").

The schema already rejects structural errors (a string for `replicas`); this module catches the
semantic ones and names each with the reason the user sees in the `Failed` condition message
(`<Reason>: <text>`) and in the Warning Event. Problems are returned, never raised, so the
caller can report all of them; the first one is the one shown in the condition.

A job with an unknown framework cannot be checked further (the replica types depend on it), so
that problem is returned alone.

Structure is checked here too wherever the schema does not reach: the pod template is
preserve-unknown-fields, and an older or looser CRD may not type runPolicy. Everything the
pod builders (desired.py, env.py) read is checked, so that they may trust it: plan() must be
total, and a job they could not build is better failed now (JobValidFailed) than retried
forever as FailedCreatePod. `InvalidRunPolicy` and `InvalidJobName` are our additions to the
design's reasons. The name is checked for what the controller derives from it: every pod carries
it as a label value (at most 63 characters), and the leader's Service is named after it (a
DNS-1035 label). Without that check such a job stayed Created for ever, its Service refused
with 422 on every retry.

`validate` runs in every plan, so twice in most reconciles, and a job's spec rarely changes:
its answer is remembered by a digest of everything it reads (the framework label, the name and
the spec), which costs a tenth of checking again (17 against 140 us for the sample job). The
answer is the same either way; a job whose spec cannot be encoded is simply checked every
time.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from ascendjob_controller.job.desired import pod_name
from ascendjob_controller.job.quantity import parse_quantity
from ascendjob_controller.job.types import (
    CLEAN_ALL,
    CLEAN_NONE,
    CLEAN_RUNNING,
    FRAMEWORK_LABEL,
    LABEL_JOB_NAME,
    LEADER_REQUIRED,
    LEADERS,
    MAX_NPUS,
    MAX_REPLICAS,
    NPU_RESOURCE_PREFIX,
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
INVALID_RUN_POLICY = "InvalidRunPolicy"
INVALID_JOB_NAME = "InvalidJobName"
#: Bounds of the integer run-policy fields, as the CRD schema declares them (a looser or older
#: CRD may not enforce them): name -> minimum.
_RUN_POLICY_INTS = {"backoffLimit": 0, "activeDeadlineSeconds": 1, "ttlSecondsAfterFinished": 0}
_INT64_MAX = 2**63 - 1
#: Label values and DNS labels alike: at most 63 characters (validation.LabelValueMaxLength,
#: validation.DNS1035LabelMaxLength in apimachinery).
MAX_LABEL_LENGTH = 63
#: A Service's name: a DNS-1035 label, as kube-apiserver checks it (`IsDNS1035Label`).
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True)
class Problem:
    """One validation failure: a CamelCase reason and a human sentence."""

    reason: str
    text: str

    @property
    def message(self) -> str:
        return f"{self.reason}: {self.text}"


#: Remembered answers of `validate`, by `_memo_key`; emptied when full (a few jobs' specs
#: change at a time, so what matters is holding every live job's, not evicting well).
_MEMO: dict[bytes, tuple[Problem, ...]] = {}
MEMO_SIZE = 8192


def validate(job: dict[str, Any]) -> list[Problem]:
    """Return every problem found in the job's spec, in a stable order; [] when valid."""
    key = _memo_key(job)
    if key is not None and (known := _MEMO.get(key)) is not None:
        return list(known)
    problems = _validate(job)
    if key is not None:
        if len(_MEMO) >= MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = tuple(problems)
    return problems


def _memo_key(job: dict[str, Any]) -> bytes | None:
    """A digest of all `_validate` reads (the framework label, the name, the spec); None when
    orjson cannot encode the spec (ints past 64 bits, non-string keys, nesting past 255
    levels): then nothing is remembered.

    Exact for anything decoded from JSON. Only values JSON cannot carry would share a key
    with others (orjson writes NaN as null, a tuple as a list); no API server sends them.
    """
    try:
        meta = [dig(job, "metadata", "labels", FRAMEWORK_LABEL), dig(job, "metadata", "name")]
        raw = orjson.dumps([*meta, job.get("spec")])
    except (TypeError, orjson.JSONEncodeError):
        return None
    return hashlib.blake2b(raw, digest_size=16).digest()


def _validate(job: dict[str, Any]) -> list[Problem]:
    framework = framework_of(job)
    if framework not in LEADERS:
        raw = dig(job, "metadata", "labels", FRAMEWORK_LABEL)
        what = "missing" if raw is None else f"{raw!r} is not one of {sorted(LEADERS)}"
        return [Problem(INVALID_FRAMEWORK, f"label 'framework' is {what}")]

    problems: list[Problem] = []
    success = dig(job, "spec", "successPolicy")
    if success is not None and success not in SUCCESS_POLICIES:
        problems.append(
            Problem(INVALID_SUCCESS_POLICY, f"successPolicy {success!r} is not '' or 'AllWorkers'")
        )

    problems.extend(_check_run_policy(job))

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
    service_leader = leader if leader in seen else None
    problems.extend(_name_problems(dig(job, "metadata", "name"), service_leader))
    return problems


def _name_problems(name: Any, leader: str | None) -> list[Problem]:
    """What the API server would refuse in the names and labels we derive from the job's name.

    `leader` is the leader replica type when the job has one (it then gets a Service).
    """
    if not isinstance(name, str) or not name:
        return []
    if len(name) > MAX_LABEL_LENGTH:
        return [
            Problem(
                INVALID_JOB_NAME,
                f"metadata.name is {len(name)} characters long; its pods carry it as the value "
                f"of label {LABEL_JOB_NAME!r}, which may have at most "
                f"{MAX_LABEL_LENGTH}",
            )
        ]
    if leader is None:
        return []
    service = pod_name(name, leader, 0)
    if len(service) <= MAX_LABEL_LENGTH and _DNS1035_LABEL.fullmatch(service):
        return []
    return [
        Problem(
            INVALID_JOB_NAME,
            f"the {leader}'s Service would be named {service!r}, which is not a DNS-1035 label "
            f"(at most {MAX_LABEL_LENGTH} characters of a-z, 0-9 and '-', starting with a "
            f"letter); keep metadata.name within {MAX_LABEL_LENGTH - len(service) + len(name)} "
            "characters, starting with a letter and without dots",
        )
    ]


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

    template = spec.get("template")
    if not isinstance(template, dict):
        problems.append(Problem(INVALID_REPLICA_SPEC, f"{rtype}: the template is not an object"))
        return problems
    problems.extend(_template_problems(rtype, template))
    containers = dig(template, "spec", "containers")
    if not isinstance(containers, list) or not containers:
        problems.append(Problem(INVALID_REPLICA_SPEC, f"{rtype}: the template has no containers"))
        return problems
    # The template is free-form in the CRD (preserve-unknown-fields), so the container fields
    # we read or extend are checked here: a pod the API server rejects would only surface
    # later as an endless FailedCreatePod, and the code that builds pods may trust them.
    for position, container in enumerate(containers):
        text = _container_problem(container, position)
        if text is not None:
            problems.append(Problem(INVALID_CONTAINER, f"{rtype}: {text}"))
            break
    return problems


#: Deeper templates are refused: the pod builders copy the template (copy.deepcopy recurses,
#: and raises RecursionError from about 500 levels), and no real pod spec comes near this.
MAX_TEMPLATE_DEPTH = 100


def nesting_depth(value: Any, limit: int = MAX_TEMPLATE_DEPTH) -> int:
    """How deeply maps and lists nest in `value`, counted without recursion; stops past limit.

    Level by level: each pass keeps the maps and lists of one level and gathers their children
    with `list.extend`, so the per-node work is one isinstance in a comprehension. It runs on
    every template of every reconcile; the walk with a stack of (node, depth) pairs it replaced
    was half of `validate`'s time.
    """
    depth, level = 0, [value]
    while True:
        nests = [node for node in level if isinstance(node, dict | list)]
        if not nests:
            return depth
        depth += 1
        if depth > limit:
            return depth
        level = []
        for node in nests:
            level.extend(node.values() if isinstance(node, dict) else node)


def _template_problems(rtype: str, template: dict[str, Any]) -> list[Problem]:
    """The template fields outside its containers that the pod builders read and copy."""
    problems: list[Problem] = []
    if nesting_depth(template) > MAX_TEMPLATE_DEPTH:
        return [
            Problem(
                INVALID_REPLICA_SPEC,
                f"{rtype}: template nests deeper than {MAX_TEMPLATE_DEPTH} levels",
            )
        ]
    meta = template.get("metadata")
    if meta is not None and not (
        isinstance(meta, dict) and _string_map(meta.get("labels"), meta.get("annotations"))
    ):
        problems.append(
            Problem(
                INVALID_REPLICA_SPEC,
                f"{rtype}: template.metadata labels and annotations must map strings to strings",
            )
        )
    # Read for the HostNetwork variable, and a pod with a non-boolean one is never created.
    host_network = dig(template, "spec", "hostNetwork")
    if host_network is not None and not isinstance(host_network, bool):
        problems.append(
            Problem(INVALID_REPLICA_SPEC, f"{rtype}: template.spec.hostNetwork must be a boolean")
        )
    return problems


def _string_map(*values: Any) -> bool:
    """Every value is absent or an object of strings to strings."""
    return all(
        value is None
        or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))
        for value in values
    )


def _container_problem(container: Any, position: int) -> str | None:
    """What is wrong with one container of a template, or None."""
    if not isinstance(container, dict):
        return f"container #{position} is not an object"
    name = container.get("name")
    if not isinstance(name, str) or not name:
        return f"container #{position} has no name"
    if not container.get("image"):
        return f"container {name!r} has no image"
    env = container.get("env")
    if env is not None and not (
        isinstance(env, list)
        and all(
            isinstance(item, dict)
            and isinstance(item.get("name"), str)
            and item["name"]
            and isinstance(item.get("value", ""), str)
            for item in env
        )
    ):
        return f"container {name!r}: env must be a list of {{name, value}} with string values"
    ports = container.get("ports")
    if ports is not None and not (
        isinstance(ports, list)
        and all(
            isinstance(port, dict) and (as_int(port.get("containerPort")) or 0) in range(1, 65536)
            for port in ports
        )
    ):
        return f"container {name!r}: ports must be a list of {{containerPort: 1..65535}}"
    return _resources_problem(name, container.get("resources"))


def _resources_problem(name: str, resources: Any) -> str | None:
    if resources is None:
        return None
    if not isinstance(resources, dict):
        return f"container {name!r}: resources is not an object"
    for section in ("requests", "limits"):
        amounts = resources.get(section)
        if amounts is None:
            continue
        if not isinstance(amounts, dict):
            return f"container {name!r}: resources.{section} is not an object"
        for resource, raw in amounts.items():
            amount = parse_quantity(raw)
            if amount is None or amount < 0:
                return f"container {name!r}: {section} {resource}={raw!r} is not a quantity"
            # Extended resources are whole devices; the bound keeps LOCAL_RANK's list sane.
            if str(resource).startswith(NPU_RESOURCE_PREFIX) and (
                amount != int(amount) or amount > MAX_NPUS
            ):
                return (
                    f"container {name!r}: {section} {resource}={raw!r} is not a whole "
                    f"number of devices in 0..{MAX_NPUS}"
                )
    return _npu_limits_problem(name, resources)


def _npu_limits_problem(name: str, resources: dict[str, Any]) -> str | None:
    """kube-apiserver's rule for extended resources, which cannot be overcommitted: a request
    needs a limit, and the two are equal. Without this check every pod create is a 422 and the
    job would sit in Created forever."""
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    for resource, raw in requests.items():
        if not str(resource).startswith(NPU_RESOURCE_PREFIX):
            continue
        if resource not in limits:
            return (
                f"container {name!r}: requests {resource}={raw!r} has no limit; extended "
                f"resources need limits (set limits, requests default to them)"
            )
        if parse_quantity(limits[resource]) != parse_quantity(raw):
            return (
                f"container {name!r}: requests {resource}={raw!r} must equal its limit "
                f"{limits[resource]!r}"
            )
    return None


def _check_run_policy(job: dict[str, Any]) -> list[Problem]:
    """runPolicy and schedulerName as the CRD types them, for a looser or older CRD."""
    problems: list[Problem] = []
    scheduler = dig(job, "spec", "schedulerName")
    if scheduler is not None and not isinstance(scheduler, str):
        problems.append(Problem(INVALID_SPECS, f"schedulerName {scheduler!r} is not a string"))
    policy = dig(job, "spec", "runPolicy")
    if policy is None:
        return problems
    if not isinstance(policy, dict):
        return [*problems, Problem(INVALID_RUN_POLICY, "runPolicy is not an object")]
    for field, minimum in _RUN_POLICY_INTS.items():
        raw = policy.get(field)
        value = as_int(raw)
        if raw is not None and (value is None or not minimum <= value <= _INT64_MAX):
            problems.append(
                Problem(INVALID_RUN_POLICY, f"{field} {raw!r} is not an integer >= {minimum}")
            )
    clean = policy.get("cleanPodPolicy")
    if clean is not None and clean not in (CLEAN_NONE, CLEAN_RUNNING, CLEAN_ALL):
        problems.append(
            Problem(INVALID_RUN_POLICY, f"cleanPodPolicy {clean!r} is not None, Running or All")
        )
    scheduling = policy.get("schedulingPolicy")
    if scheduling is None:
        return problems
    min_available = as_int(dig(scheduling, "minAvailable"))
    if (
        not isinstance(scheduling, dict)
        or (scheduling.get("minAvailable") is not None and (min_available or 0) < 0)
        or (scheduling.get("minAvailable") is not None and min_available is None)
        or not all(isinstance(scheduling.get(key, ""), str) for key in ("queue", "priorityClass"))
        or not isinstance(scheduling.get("minResources", {}), dict)
        or any(parse_quantity(v) is None for v in (scheduling.get("minResources") or {}).values())
    ):
        problems.append(
            Problem(
                INVALID_RUN_POLICY,
                "schedulingPolicy needs minAvailable >= 0, string queue and priorityClass, "
                "and minResources of quantities",
            )
        )
    return problems
