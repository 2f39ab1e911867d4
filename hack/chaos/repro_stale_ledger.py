"""Reproduce the restart-ledger bug the chaos run found, with `plan()` alone (docs/chaos.md).

`python -m hack.chaos.repro_stale_ledger` exits 1 while the bug is there, 0 once it is fixed.

The bug: plan() prunes the restart bookkeeping in the job's status (`recreatedPods`,
`countedContainerRestarts`) of every pod uid it does not see in the pod cache. A pod cache
that lags behind the job cache (a new leader whose pod watch is not caught up, a pod informer
in its retry back-off) makes a pod whose restart is already recorded look gone; its entry is
dropped, and when the cache catches up the same failure (or the same container restarts) is
counted again. In the chaos run that gave `restartCount` 5 and 6 for OnFailure jobs that
restarted 4 times, and BackoffLimitExceeded for ExitCode jobs that had a restart left.

The steps below are a `backoff` job of the chaos mix (ExitCode, backoffLimit 1, one Worker):
its Worker fails with 137 once, which is restart 1 of 1 allowed, so the job must recreate the
Worker and stay Restarting.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from ascendjob_controller.job.desired import desired_pod, desired_service
from ascendjob_controller.job.env import parse_job_with_meta
from ascendjob_controller.job.plan import PlanOptions, plan
from hack.chaos.jobs import KIND_BY_NAME, PlannedJob, job_body

OPERATOR = "ascendjob-controller"
CLUSTER_IP = "10.96.0.10"
START = datetime(2026, 1, 1, tzinfo=UTC)


def _job() -> dict[str, Any]:
    job = job_body(PlannedJob("repro-backoff", KIND_BY_NAME["backoff"], 1.0))
    job["metadata"].update(uid="job-uid", resourceVersion="1")
    job["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return job


def _pod(job: dict[str, Any], rtype: str, uid: str, code: int | None) -> dict[str, Any]:
    """Our pod of `rtype`, Running (code None) or Failed with exit code `code`."""
    pod = desired_pod(
        parse_job_with_meta(job), rtype, 0, CLUSTER_IP, gang=False, operator_name=OPERATOR
    )
    pod["metadata"]["uid"] = uid
    state: dict[str, Any] = {"running": {}} if code is None else {"terminated": {"exitCode": code}}
    pod["status"] = {
        "phase": "Running" if code is None else "Failed",
        "containerStatuses": [{"name": "ascend", "restartCount": 0, "state": state}],
    }
    return pod


def main() -> int:
    job = _job()
    service = desired_service(parse_job_with_meta(job), OPERATOR)
    assert service is not None
    service["metadata"]["uid"] = "service-uid"
    service["spec"]["clusterIP"] = CLUSTER_IP
    pods = [_pod(job, "Master", "master-uid", None), _pod(job, "Worker", "worker-uid", 137)]
    steps = [
        ("the Worker failed with 137; caches current", pods),
        ("the next reconcile (deletes the recorded pod)", pods),
        ("a reconcile with a lagging pod cache", []),
        ("the pod cache caught up: the same failed pod", pods),
    ]
    state = ""
    for second, (what, seen) in enumerate(steps, start=1):
        result = plan(
            job,
            seen,
            [service],
            None,
            START + timedelta(seconds=second),
            PlanOptions(gang_scheduling_enabled=False),
        )
        if result.status is not None:
            job = {**job, "status": result.status}
        status = job.get("status") or {}
        state = str(result.state)
        reason = (status.get("conditions") or [{}])[-1].get("reason")
        print(
            f"{second}. {what}: {state} ({reason}), restartCount {status.get('restartCount')}, "
            f"recreatedPods {status.get('recreatedPods')}"
        )
    if state == "Failed":
        print("BUG: one restart of 1 allowed ended the job BackoffLimitExceeded")
        return 1
    print("ok: the recorded restart survived the lagging cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
