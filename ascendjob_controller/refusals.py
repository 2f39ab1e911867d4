"""Children the API server refused as invalid, remembered until their job has failed.

A pod whose template the server rejects, as invalid (422: a container named `UPPER`, a volume
without a name, anything kube-apiserver validates that our `validate` does not) or as
undecodable (400: a container `command` that is a number), would otherwise be created
again with back-off for ever, the job sitting in Created with only a stream of
`FailedCreatePod` Events to say why. The reconciler notes the refusal here, the retry's plan
gets it as `plan(..., refused=...)`, and the job fails like any invalid job: `JobValidFailed`,
the server's own words in the message, a Warning Event, the cleanup its policy asks for.

Kept in memory, per job and generation: after a restart the create is refused once more and
noted again; an edited spec (a new generation) is planned afresh.
"""

from __future__ import annotations

import threading
from typing import Any

from ascendjob_controller.job.validation import Problem

#: The problem's reason by the refused child's kind: for a pod, the part the user wrote.
_REASONS = {"Pod": "InvalidPodTemplate", "Service": "InvalidService", "PodGroup": "InvalidPodGroup"}


def refusal(kind: str, child_key: str, message: str) -> Problem:
    """The problem a refused create of `kind` `child_key` makes, with the server's message."""
    reason = _REASONS.get(kind, f"Invalid{kind}")
    return Problem(reason, f"the API server refused {kind.lower()} {child_key}: {message}")


def _identity(job: dict[str, Any]) -> tuple[str, Any]:
    meta = job.get("metadata") or {}
    return str(meta.get("uid") or ""), meta.get("generation")


class Refusals:
    """The first refusal of each job's current generation, by job key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, tuple[tuple[str, Any], Problem]] = {}

    def note(self, key: str, job: dict[str, Any], problem: Problem) -> None:
        """Keep the first refusal of a generation; a new generation's replaces an older one."""
        identity = _identity(job)
        with self._lock:
            known = self._by_key.get(key)
            if known is None or known[0] != identity:
                self._by_key[key] = (identity, problem)

    def of(self, key: str, job: dict[str, Any]) -> Problem | None:
        """The refusal noted for this very job and generation, else None."""
        entry = self._by_key.get(key)
        if entry is None or entry[0] != _identity(job):
            return None
        return entry[1]

    def forget(self, key: str) -> None:
        with self._lock:
            self._by_key.pop(key, None)
