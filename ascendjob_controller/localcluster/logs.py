"""`kubectl logs` for simulated pods: a log synthesized from the container's recorded state.

There are no real processes, but the status the simulated kubelet writes says when each run
started and how it ended; printing that makes `kubectl logs` useful in demos (pure).
"""

from __future__ import annotations

from typing import Any


class LogError(ValueError):
    """Why there is no log: the message kube-apiserver would give, as a 400."""


def _container_names(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    return [c.get("name", "") for c in spec.get("containers") or [] if isinstance(c, dict)]


def pod_log(pod: dict[str, Any], container: str, previous: bool = False) -> str:
    """The log text of one container (or of the only container when `container` is "")."""
    name = pod["metadata"]["name"]
    names = _container_names(pod)
    if not container:
        if len(names) != 1:
            raise LogError(
                f"a container name must be specified for pod {name}, choose one of: "
                f"[{' '.join(names)}]"
            )
        container = names[0]
    if container not in names:
        raise LogError(f"container {container} is not valid for pod {name}")
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    status = next((s for s in statuses if s.get("name") == container), None)
    state_key = "lastState" if previous else "state"
    state = (status or {}).get(state_key) or {}
    if previous and not state:
        raise LogError(f'previous terminated container "{container}" in pod "{name}" not found')
    if not state or "waiting" in state:
        reason = (state.get("waiting") or {}).get("reason", "ContainerCreating")
        raise LogError(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    image = (status or {}).get("image", "")
    lines = []
    if "running" in state:
        started = state["running"].get("startedAt", "")
        lines.append(f"{started} simulated container {container} ({image}) started")
    if "terminated" in state:
        term = state["terminated"]
        lines.append(
            f"{term.get('startedAt', '')} simulated container {container} ({image}) started"
        )
        lines.append(
            f"{term.get('finishedAt', '')} exited with code {term.get('exitCode')}"
            f" ({term.get('reason', '')})"
        )
    return "".join(line + "\n" for line in lines)
