"""The Events that announce what one plan did to a job's children, as a pure function.

Why not one Event per child, as the Kubernetes Job controller and Kubeflow do: an Event is an
API write, and on a busy cluster they were 5 of our 12 requests per two-pod job, and 1,001 of
the requests of a 1,000-Worker job. `kubectl describe` reads just as well when the children a
plan touched share one Event per reason:

    Normal  SuccessfulCreateService  Created service: test
    Normal  SuccessfulCreatePod      Created 2 pods: test-master-0, test-worker-0
    Normal  JobSucceeded             <the transition's message>. Deleted service: test.

- One Event per (type, reason) per executed plan, naming its children in the order acted on.
  One child keeps the single-object message Kubernetes controllers use (`Created pod: x`).
- The cleanup a terminal transition does (the Service, pods under cleanPodPolicy) is part of
  that transition: it is named in the transition's own Event instead of an Event of its own.
  Force-deletes are Warnings about lost nodes and are never folded away.
- A message stays within `MAX_MESSAGE` characters (events.k8s.io's limit on a note): the
  names that do not fit are counted ("and 950 more").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .plan import EVENT_FORCE_DELETE, NORMAL, WARNING, EventSpec

MAX_MESSAGE = 1024

CREATE = "create"
DELETE = "delete"
FORCE_DELETE = "force-delete"


@dataclass(frozen=True)
class ChildAction:
    """One child the reconciler created or deleted, once the API server accepted it."""

    verb: str  # CREATE | DELETE | FORCE_DELETE
    kind: str  # "Pod" | "Service" | "PodGroup"
    name: str


def child_events(
    actions: Sequence[ChildAction],
    announced: Sequence[EventSpec] = (),
    *,
    terminal: bool = False,
) -> list[EventSpec]:
    """The Events for `actions`, then `announced` (the plan's own), merged as described above.

    `terminal` says the plan's stored status made the job Succeeded or Failed; its plain
    deletes are then named in the last announced Event (the transition's) instead.
    """
    announced = list(announced)
    fold = terminal and bool(announced)
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    folded: dict[str, list[str]] = {}
    for action in actions:
        if fold and action.verb == DELETE:
            folded.setdefault(action.kind, []).append(action.name)
            continue
        groups.setdefault(_group(action), []).append(action.name)
    events = [_event(group, names) for group, names in groups.items()]
    if folded:
        last = announced[-1]
        cleanup = "; ".join(_listing("Deleted", kind, names) for kind, names in folded.items())
        text = f"{last.message.rstrip('.')}. {cleanup}."
        announced[-1] = replace(last, message=_fit(text))
    return events + announced


def _group(action: ChildAction) -> tuple[str, str, str, str]:
    """(type, reason, verb shown, kind): the actions one Event may announce together."""
    if action.verb == FORCE_DELETE:
        return (WARNING, EVENT_FORCE_DELETE, "Force-deleted", action.kind)
    if action.verb == CREATE:
        return (NORMAL, f"SuccessfulCreate{action.kind}", "Created", action.kind)
    return (NORMAL, f"SuccessfulDelete{action.kind}", "Deleted", action.kind)


def _event(group: tuple[str, str, str, str], names: list[str]) -> EventSpec:
    type_, reason, verb, kind = group
    text = _listing(verb, kind, names)
    if reason == EVENT_FORCE_DELETE:
        text += " (stuck terminating on a node that is gone)"
    return EventSpec(type_, reason, _fit(text))


def _listing(verb: str, kind: str, names: list[str]) -> str:
    """'Created pod: a', or 'Created 3 pods: a, b, c', trimmed to fit with a count of the rest."""
    noun = kind.lower()
    if len(names) == 1:
        return f"{verb} {noun}: {names[0]}"
    head = f"{verb} {len(names)} {noun}s: "
    room = MAX_MESSAGE // 2 - len(head)  # leave room for a transition's own text
    shown: list[str] = []
    used = 0
    for name in names:
        if used + len(name) + 2 > room:
            break
        shown.append(name)
        used += len(name) + 2
    rest = len(names) - len(shown)
    return head + ", ".join(shown) + (f" and {rest} more" if rest else "")


def _fit(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


__all__ = ["CREATE", "DELETE", "FORCE_DELETE", "MAX_MESSAGE", "ChildAction", "child_events"]
