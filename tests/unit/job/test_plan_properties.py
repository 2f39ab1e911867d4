"""Property tests: random kubelet histories never break the state machine's invariants."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .factories import T0, job
from .world import World

ACTIONS = st.tuples(
    st.integers(min_value=0, max_value=3),  # which pod (modulo the pods present)
    st.sampled_from(["Running", "Succeeded", "Failed", "restart", "delete", "wait"]),
    st.sampled_from([None, 0, 1, 127, 128, 137, 143]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(["Never", "ExitCode", "OnFailure", "Always"]),
    workers=st.integers(min_value=1, max_value=3),
    backoff=st.one_of(st.none(), st.integers(min_value=0, max_value=3)),
    steps=st.lists(ACTIONS, min_size=1, max_size=25),
)
def test_random_histories_keep_invariants(
    policy: str, workers: int, backoff: int | None, steps: list[tuple[int, str, int | None]]
) -> None:
    run_policy = {} if backoff is None else {"backoffLimit": backoff}
    world = World(job(workers=workers, policy=policy, run_policy=run_policy))
    world.settle()
    restarts = 0
    finished = False
    for which, action, code in steps:
        names = sorted(world.pods)
        if action == "wait":
            world.now += timedelta(seconds=30)
        elif names:
            name = names[which % len(names)]
            pod = world.pods[name]
            seen = sum(
                s.get("restartCount", 0)
                for s in (pod.get("status") or {}).get("containerStatuses") or []
            )
            if action == "delete":
                del world.pods[name]
            elif action == "restart":
                world.kubelet(name, "Running", restarts=seen + 1)
            else:
                world.kubelet(name, action, code if action != "Running" else None, restarts=seen)
        world.settle(limit=6)
        status = world.job["status"]
        conditions = status["conditions"]
        assert conditions[-1]["status"] == "True"
        true_types = {c["type"] for c in conditions if c["status"] == "True"}
        assert not {"Running", "Restarting"} <= true_types
        assert len({"Succeeded", "Failed"} & true_types) <= 1
        assert status["restartCount"] >= restarts
        restarts = status["restartCount"]
        if finished:
            assert world.state in ("Succeeded", "Failed")
            assert "completionTime" in status
        finished = world.state in ("Succeeded", "Failed")
        if backoff is not None and world.state != "Failed":
            assert restarts <= backoff
        assert world.plan().status is None
    assert status["startTime"] == T0.strftime("%Y-%m-%dT%H:%M:%SZ")
