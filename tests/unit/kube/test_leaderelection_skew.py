"""Leader election decides expiry on its own monotonic clock, never by the lease's wall time."""

from __future__ import annotations

import copy
from typing import Any, cast

from ascendjob_controller.kube.client import ApiError, KubeClient, Resource
from ascendjob_controller.kube.leaderelection import LeaderElector


class FakeLeases:
    """One Lease with resourceVersion compare-and-swap, like the API server."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0

    def get(self, res: Resource, ns: str, name: str, **kw: Any) -> dict[str, Any]:
        if self.lease is None:
            raise ApiError(404, "NotFound", "no lease")
        return copy.deepcopy(self.lease)

    def create(self, res: Resource, ns: str, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if self.lease is not None:
            raise ApiError(409, "AlreadyExists", "exists")
        return self._store(body)

    def update(self, res: Resource, ns: str, body: dict[str, Any], **kw: Any) -> dict[str, Any]:
        assert self.lease is not None
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "stale")
        return self._store(body)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.lease)

    def renew_as(self, holder: str, renew_time: str) -> None:
        """Another replica (whose wall clock is way off) renews the lease."""
        assert self.lease is not None
        body = copy.deepcopy(self.lease)
        body["spec"].update(holderIdentity=holder, renewTime=renew_time)
        self._store(body)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def elector(api: FakeLeases, identity: str, clock: Clock) -> LeaderElector:
    return LeaderElector(
        cast(KubeClient, api),
        "ns",
        "lock",
        identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        on_started_leading=lambda: None,
        on_stopped_leading=lambda: None,
        clock=clock,
    )


def test_a_lease_renewed_with_an_ancient_wall_clock_is_still_respected() -> None:
    api = FakeLeases()
    clock = Clock()
    a = elector(api, "a", Clock())
    assert a._try_acquire_or_renew(timeout=1)
    api.renew_as("a", "1999-01-01T00:00:00.000000Z")  # A's clock is decades behind
    b = elector(api, "b", clock)
    assert not b._try_acquire_or_renew(timeout=1)
    for _ in range(20):  # A keeps renewing; B never takes over, whatever renewTime says
        clock.now += 10
        api.renew_as("a", "1999-01-01T00:00:00.000000Z")
        assert not b._try_acquire_or_renew(timeout=1)


def test_a_lease_dated_in_the_future_expires_by_our_clock() -> None:
    api = FakeLeases()
    clock = Clock()
    a = elector(api, "a", Clock())
    assert a._try_acquire_or_renew(timeout=1)
    api.renew_as("a", "2999-01-01T00:00:00.000000Z")  # A's clock is centuries ahead
    b = elector(api, "b", clock)
    assert not b._try_acquire_or_renew(timeout=1)
    clock.now += 14.9
    assert not b._try_acquire_or_renew(timeout=1)
    clock.now += 0.2  # 15 s with no change of the record, on B's own clock
    assert b._try_acquire_or_renew(timeout=1)
    assert api.lease is not None
    assert api.lease["spec"]["holderIdentity"] == "b"
    assert api.lease["spec"]["leaseTransitions"] == 1


def test_racing_candidates_are_serialised_by_resource_version() -> None:
    api = FakeLeases()
    clock = Clock()
    a = elector(api, "a", clock)
    assert a._try_acquire_or_renew(timeout=1)
    api.renew_as("", "2020-01-01T00:00:00.000000Z")  # released
    b = elector(api, "b", clock)
    c = elector(api, "c", clock)
    lease = api.get(Resource("", "", "", ""), "ns", "lock")
    real_get = api.get
    api.get = lambda *a, **k: copy.deepcopy(lease)  # type: ignore[method-assign]
    results = [b._try_acquire_or_renew(timeout=1), c._try_acquire_or_renew(timeout=1)]
    api.get = real_get  # type: ignore[method-assign]
    assert results == [True, False], "the second writer hits 409 Conflict and does not lead"
