"""The job mix of the chaos run: what each job runs, and what it must end as.

Every job is pytorch, one Master and `workers` Workers. The Master always exits 0; the
Workers run the kind's exit-code script (the simulated kubelet's `sim.acjob.local/exit-code`,
the k-th run of a pod name exits with the k-th code). Only the Workers fail, and each Worker
fails on its own schedule, so the expected restart count is exact whatever order the kubelet
reports the pods in:

  kind          policy    script       workers limit ends as                     restarts
  success       ExitCode  0            1       -     Succeeded JobSucceeded      0
  signal-retry  ExitCode  137,0        2       3     Succeeded JobSucceeded      2
  program-error ExitCode  1            1       3     Failed JobFailed            0
  backoff       ExitCode  137,137,137  1       1     Failed BackoffLimitExceeded 1
  never         Never     137          1       -     Failed JobFailed            0
  onfailure     OnFailure 1,1,0        2       -     Succeeded JobSucceeded      4

Why these counts (job/restart.py: a restart is each in-place container restart plus each pod
the controller recreates): signal-retry recreates each Worker once; backoff recreates its
Worker once (1 <= limit 1) and fails on the second 137 (that restart would be the 2nd, over
the limit, so it is not counted); onfailure restarts each Worker's container twice in place.
`pods` is how many pods a job ever gets: one per replica plus one per recreation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

NAMESPACE = "chaos"
RUN_SECONDS_ANNOTATION = "sim.acjob.local/run-seconds"
EXIT_CODE_ANNOTATION = "sim.acjob.local/exit-code"
JOBS_PATH = f"/apis/mindxdl.gitee.com/v1/namespaces/{NAMESPACE}/ascendjobs"


@dataclass(frozen=True)
class Kind:
    """One row of the table in the module docstring."""

    name: str
    policy: str
    worker_codes: str
    workers: int
    backoff_limit: int | None
    state: str
    reason: str
    restarts: int
    pods: int

    @property
    def replicas(self) -> int:
        """Pods the job may have at once: the Master and its Workers."""
        return 1 + self.workers


KINDS: tuple[Kind, ...] = (
    Kind("success", "ExitCode", "0", 1, None, "Succeeded", "JobSucceeded", 0, 2),
    Kind("signal-retry", "ExitCode", "137,0", 2, 3, "Succeeded", "JobSucceeded", 2, 5),
    Kind("program-error", "ExitCode", "1", 1, 3, "Failed", "JobFailed", 0, 2),
    Kind("backoff", "ExitCode", "137,137,137", 1, 1, "Failed", "BackoffLimitExceeded", 1, 3),
    Kind("never", "Never", "137", 1, None, "Failed", "JobFailed", 0, 2),
    Kind("onfailure", "OnFailure", "1,1,0", 2, None, "Succeeded", "JobSucceeded", 4, 3),
)
KIND_BY_NAME = {kind.name: kind for kind in KINDS}


@dataclass(frozen=True)
class PlannedJob:
    """A job of the run: its name, kind and how long each of its pods' runs lasts."""

    name: str
    kind: Kind
    run_seconds: float


def plan_jobs(count: int, seed: int, prefix: str = "chaos") -> list[PlannedJob]:
    """`count` jobs, the kinds as even as possible, in an order shuffled by `seed`.

    Even counts (not a weighted draw) so that every kind is exercised by a small --quick run
    too; run times of 1 or 2 s so that pods of different jobs end at different moments.
    """
    rng = random.Random(seed)
    kinds = [KINDS[i % len(KINDS)] for i in range(count)]
    rng.shuffle(kinds)
    return [
        PlannedJob(f"{prefix}-{i:04d}-{kind.name}", kind, float(rng.choice((1, 2))))
        for i, kind in enumerate(kinds)
    ]


def _replica(policy: str, replicas: int, seconds: float, codes: str) -> dict[str, Any]:
    annotations = {RUN_SECONDS_ANNOTATION: f"{seconds:g}", EXIT_CODE_ANNOTATION: codes}
    container = {"name": "ascend", "image": "busybox:1.36", "command": ["sh", "-c", "true"]}
    return {
        "replicas": replicas,
        "restartPolicy": policy,
        "template": {
            "metadata": {"annotations": annotations},
            "spec": {"containers": [container]},
        },
    }


def job_body(job: PlannedJob) -> dict[str, Any]:
    """The AscendJob to POST: cleanPodPolicy Running, so a finished job leaves no live pod."""
    kind = job.kind
    run_policy: dict[str, Any] = {"cleanPodPolicy": "Running"}
    if kind.backoff_limit is not None:
        run_policy["backoffLimit"] = kind.backoff_limit
    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {
            "name": job.name,
            "namespace": NAMESPACE,
            "labels": {"framework": "pytorch", "chaos-kind": kind.name},
        },
        "spec": {
            "successPolicy": "AllWorkers",
            "runPolicy": run_policy,
            "replicaSpecs": {
                "Master": _replica(kind.policy, 1, job.run_seconds, "0"),
                "Worker": _replica(kind.policy, kind.workers, job.run_seconds, kind.worker_codes),
            },
        },
    }
