"""The perfect client's analysis variant sends the Events ours sends, shaped as ours.

`perfect-events` is there to compare ours with a minimal client doing the same writes, so its
Events must be ours: the same reasons and messages (job/child_events.py for the benchmark's
job) and the same body (kube/events.py's new Event). `lifecycle` may not import the
controller, so these tests hold its copy to the controller's code.
"""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.job.child_events import CREATE, DELETE, ChildAction, child_events
from ascendjob_controller.job.plan import EventSpec
from ascendjob_controller.job.status import Observation, decide
from ascendjob_controller.kube.events import EventAggregator, event_key, involved_object
from hack.peers.lifecycle import (
    CREATED,
    FAILED,
    RUNNING,
    SUCCEEDED,
    event_body,
    lifecycle_events,
    pod_name,
    replicas,
    service_name,
)
from tests.unit.bench.test_peers_children import stored_job


def as_tuples(specs: list[EventSpec]) -> list[tuple[str, str, str]]:
    return [(spec.type, spec.reason, spec.message) for spec in specs]


def test_the_children_created_are_announced_as_ours_announces_them() -> None:
    job = stored_job()
    name = job["metadata"]["name"]
    actions = [ChildAction(CREATE, "Service", service_name(name))]
    actions += [ChildAction(CREATE, "Pod", pod_name(name, t, i)) for t, i in replicas(job)]
    assert lifecycle_events(job, CREATED) == as_tuples(child_events(actions))


def test_success_names_the_deleted_service_in_the_transitions_event_as_ours_does() -> None:
    job = stored_job()
    name = job["metadata"]["name"]
    # The transition's Event is the verdict of our status rule for a job whose pods all
    # succeeded, with the Service its cleanup deleted folded into it.
    verdict = decide("Running", Observation(f"bench/{name}", desired=2, succeeded=2), None)
    announced = [EventSpec("Normal", verdict.reason, verdict.message)]
    actions = [ChildAction(DELETE, "Service", service_name(name))]
    ours = child_events(actions, announced, terminal=True)
    assert lifecycle_events(job, SUCCEEDED) == as_tuples(ours)


@pytest.mark.parametrize("state", [RUNNING, FAILED])
def test_running_and_failing_send_no_event(state: str) -> None:
    """Ours sends none on Running; a failure's Event has the failure's message, which the
    peers do not know (the benchmark's jobs succeed)."""
    assert lifecycle_events(stored_job(), state) == []


@pytest.mark.parametrize("reason", ["SuccessfulCreatePod", "JobSucceeded"])
def test_an_event_body_has_the_fields_of_ours(reason: str) -> None:
    job = stored_job()
    job["metadata"]["resourceVersion"] = "42"
    key = event_key(involved_object(job), "Normal", reason, "m")
    ours: dict[str, Any] = EventAggregator("c").plan(key, involved_object(job), 1, 0.0).body
    peers = event_body(job, "Normal", reason, "m", "c")
    assert set(peers) == set(ours)
    assert set(peers["metadata"]) == set(ours["metadata"])
    assert peers["involvedObject"] == ours["involvedObject"]
    for field in ("reason", "message", "type", "count", "source", "reportingComponent"):
        assert peers[field] == ours[field], field
    assert peers["metadata"]["name"].startswith(f"{job['metadata']['name']}.")
