"""The reconciler's memory of creates refused as invalid (422), per job and generation."""

from __future__ import annotations

from typing import Any

from ascendjob_controller.job.validation import Problem
from ascendjob_controller.refusals import Refusals, refusal


def _job(uid: str = "u1", generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "j", "namespace": "ns", "uid": uid, "generation": generation}}


def test_refusal_names_the_child_and_keeps_the_servers_words() -> None:
    pod = refusal("Pod", "ns/j-worker-0", 'Pod "j-worker-0" is invalid: spec.volumes[0].name')
    assert pod == Problem(
        "InvalidPodTemplate",
        'the API server refused pod ns/j-worker-0: Pod "j-worker-0" is invalid: '
        "spec.volumes[0].name",
    )
    assert refusal("Service", "ns/j-master-0", "m").reason == "InvalidService"
    assert refusal("PodGroup", "ns/j-u1", "m").reason == "InvalidPodGroup"


def test_a_refusal_holds_for_its_job_and_generation_only() -> None:
    refusals = Refusals()
    first, second = refusal("Pod", "ns/a", "1"), refusal("Pod", "ns/b", "2")
    refusals.note("ns/j", _job(), first)
    refusals.note("ns/j", _job(), second)  # the first of a generation is kept
    assert refusals.of("ns/j", _job()) == first
    assert refusals.of("ns/j", _job(generation=2)) is None  # the spec was edited since
    assert refusals.of("ns/j", _job(uid="u2")) is None  # a new job of the same name
    assert refusals.of("ns/other", _job()) is None
    refusals.note("ns/j", _job(generation=2), second)  # a newer generation replaces it
    assert refusals.of("ns/j", _job(generation=2)) == second
    refusals.forget("ns/j")
    assert refusals.of("ns/j", _job(generation=2)) is None
