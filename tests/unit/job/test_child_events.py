"""child_events(): one Event per reason per plan, cleanup named in the terminal Event."""

from __future__ import annotations

import pytest

from ascendjob_controller.job.child_events import (
    CREATE,
    DELETE,
    FORCE_DELETE,
    MAX_MESSAGE,
    ChildAction,
    child_events,
)
from ascendjob_controller.job.plan import EventSpec

SUCCEEDED = EventSpec("Normal", "JobSucceeded", "AscendJob default/test successfully completed.")
RESTARTING = EventSpec("Warning", "JobRestarting", "restarting")


def pod(verb: str, name: str) -> ChildAction:
    return ChildAction(verb, "Pod", name)


CASES = [
    pytest.param([], [], False, [], id="nothing"),
    pytest.param(
        [pod(CREATE, "a")],
        [],
        False,
        [("Normal", "SuccessfulCreatePod", "Created pod: a")],
        id="one pod keeps the single-object message",
    ),
    pytest.param(
        [ChildAction(CREATE, "Service", "s"), pod(CREATE, "a"), pod(CREATE, "b")],
        [],
        False,
        [
            ("Normal", "SuccessfulCreateService", "Created service: s"),
            ("Normal", "SuccessfulCreatePod", "Created 2 pods: a, b"),
        ],
        id="one event per reason, in the order acted on",
    ),
    pytest.param(
        [pod(DELETE, "a"), pod(CREATE, "b")],
        [RESTARTING],
        False,
        [
            ("Normal", "SuccessfulDeletePod", "Deleted pod: a"),
            ("Normal", "SuccessfulCreatePod", "Created pod: b"),
            ("Warning", "JobRestarting", "restarting"),
        ],
        id="deletes of a live job keep their own event",
    ),
    pytest.param(
        [ChildAction(DELETE, "Service", "s")],
        [SUCCEEDED],
        True,
        [
            (
                "Normal",
                "JobSucceeded",
                "AscendJob default/test successfully completed. Deleted service: s.",
            )
        ],
        id="a terminal transition names its cleanup",
    ),
    pytest.param(
        [ChildAction(DELETE, "Service", "s"), pod(DELETE, "a"), pod(DELETE, "b")],
        [RESTARTING, SUCCEEDED],
        True,
        [
            ("Warning", "JobRestarting", "restarting"),
            (
                "Normal",
                "JobSucceeded",
                "AscendJob default/test successfully completed. "
                "Deleted service: s; Deleted 2 pods: a, b.",
            ),
        ],
        id="folded into the last announced event, the transition's",
    ),
    pytest.param(
        [ChildAction(DELETE, "Service", "s")],
        [],
        True,
        [("Normal", "SuccessfulDeleteService", "Deleted service: s")],
        id="no announced event to fold into (its status was not stored)",
    ),
    pytest.param(
        [pod(FORCE_DELETE, "a"), ChildAction(DELETE, "Service", "s")],
        [SUCCEEDED],
        True,
        [
            (
                "Warning",
                "ForceDeletePod",
                "Force-deleted pod: a (stuck terminating on a node that is gone)",
            ),
            (
                "Normal",
                "JobSucceeded",
                "AscendJob default/test successfully completed. Deleted service: s.",
            ),
        ],
        id="force-deletes are never folded away",
    ),
]


@pytest.mark.parametrize(("actions", "announced", "terminal", "expected"), CASES)
def test_child_events(
    actions: list[ChildAction],
    announced: list[EventSpec],
    terminal: bool,
    expected: list[tuple[str, str, str]],
) -> None:
    events = child_events(actions, announced, terminal=terminal)
    assert [(e.type, e.reason, e.message) for e in events] == expected


def test_a_thousand_pods_are_one_bounded_event_that_counts_the_rest() -> None:
    names = [f"wide-worker-{i}" for i in range(1000)]
    (event,) = child_events([pod(CREATE, n) for n in names])
    assert event.reason == "SuccessfulCreatePod"
    assert len(event.message) <= MAX_MESSAGE
    assert event.message.startswith("Created 1000 pods: wide-worker-0, wide-worker-1, ")
    shown = event.message.split(": ", 1)[1].split(" and ")[0].split(", ")
    assert shown == names[: len(shown)]
    assert event.message.endswith(f" and {1000 - len(shown)} more")


def test_a_long_transition_message_stays_within_the_limit() -> None:
    long = EventSpec("Warning", "JobFailed", "x" * 2000)
    (event,) = child_events([ChildAction(DELETE, "Service", "s")], [long], terminal=True)
    assert len(event.message) == MAX_MESSAGE
    assert event.message.endswith("...")


def test_inputs_are_not_changed() -> None:
    announced = [SUCCEEDED]
    child_events([ChildAction(DELETE, "Service", "s")], announced, terminal=True)
    assert announced == [SUCCEEDED]
