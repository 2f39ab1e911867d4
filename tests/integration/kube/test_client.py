"""KubeClient against the local cluster: verbs, retries, ambiguous creates, QPS."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from ascendjob_controller import metrics
from ascendjob_controller.kube.client import (
    CONFIGMAPS,
    ApiConnectionError,
    ApiError,
    KubeClient,
    Resource,
    WatchTimeoutError,
    is_already_exists,
    is_conflict,
    is_gone,
    is_not_found,
)
from tests.integration.kube.helpers import (
    BlackholeProxy,
    configmap,
    fresh_namespace,
    make_client,
    proxied_client,
    rest_count,
    rest_total,
    wait_for,
)

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _clear_faults(bare_cluster: Any) -> Any:
    if hasattr(bare_cluster, "faults"):  # only the local cluster injects faults
        bare_cluster.faults.clear()
    yield
    if hasattr(bare_cluster, "faults"):  # only the local cluster injects faults
        bare_cluster.faults.clear()


def test_crud_and_errors(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    created = client.create(CONFIGMAPS, ns, configmap("a", app="x"))
    assert created["metadata"]["uid"]
    got = client.get(CONFIGMAPS, ns, "a")
    assert got["data"] == {"k": "v"}
    with pytest.raises(ApiError) as exc:
        client.create(CONFIGMAPS, ns, configmap("a"))
    assert is_already_exists(exc.value) and not is_conflict(exc.value)
    got["data"] = {"k": "w"}
    updated = client.update(CONFIGMAPS, ns, got)
    got["data"] = {"k": "stale"}
    with pytest.raises(ApiError) as exc:
        client.update(CONFIGMAPS, ns, got)
    assert is_conflict(exc.value)
    patched = client.patch(CONFIGMAPS, ns, "a", {"data": {"m": "1"}})
    assert patched["data"] == {"k": "w", "m": "1"}
    patched = client.patch(
        CONFIGMAPS, ns, "a", [{"op": "remove", "path": "/data/m"}], patch_type="json"
    )
    assert patched["data"] == {"k": "w"}
    rv = patched["metadata"]["resourceVersion"]
    client.delete(CONFIGMAPS, ns, "a", preconditions={"resourceVersion": rv})
    with pytest.raises(ApiError) as exc:
        client.get(CONFIGMAPS, ns, "a")
    assert is_not_found(exc.value)
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]


def test_list_merges_pages_and_filters(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    for i in range(7):
        client.create(CONFIGMAPS, ns, configmap(f"c{i}", parity=str(i % 2)))
    lists_before = bare_cluster.request_count("list", "configmaps")
    listed = client.list(CONFIGMAPS, ns, limit=3)
    assert sorted(o["metadata"]["name"] for o in listed["items"]) == [f"c{i}" for i in range(7)]
    assert listed["metadata"]["resourceVersion"]
    assert bare_cluster.request_count("list", "configmaps") - lists_before == 3, "3 pages"
    odd = client.list(CONFIGMAPS, ns, label_selector="parity=1")
    assert sorted(o["metadata"]["name"] for o in odd["items"]) == ["c1", "c3", "c5"]
    one = client.list(CONFIGMAPS, ns, field_selector="metadata.name=c4")
    assert [o["metadata"]["name"] for o in one["items"]] == ["c4"]


def test_list_transforms_each_page_as_it_arrives(bare_cluster: Any) -> None:
    """The informer's cache transform runs per page, so a large list never holds every
    full object at once: page 1 is transformed before page 3 is requested."""
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    for i in range(7):
        client.create(CONFIGMAPS, ns, configmap(f"t{i}"))
    lists_before = bare_cluster.request_count("list", "configmaps")
    lists_seen: list[int] = []

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        lists_seen.append(bare_cluster.request_count("list", "configmaps") - lists_before)
        return {"metadata": {"name": obj["metadata"]["name"]}, "small": True}

    listed = client.list(CONFIGMAPS, ns, limit=3, transform=transform)
    assert [o["metadata"]["name"] for o in listed["items"]] == [f"t{i}" for i in range(7)]
    assert all(o == {"metadata": o["metadata"], "small": True} for o in listed["items"])
    # The next page may already be on its way (fetched ahead), never the one after it.
    pages = [1, 1, 1, 2, 2, 2, 3]
    assert all(page <= seen <= page + 1 for page, seen in zip(pages, lists_seen, strict=True))


@pytest.mark.parametrize("expiries", [1, 2])
def test_an_expired_continue_token_lists_again_from_the_start(
    bare_cluster: Any, expiries: int
) -> None:
    """410 on a continue token: the paged list starts over once (nothing kept from the
    broken attempt), and a second expiry falls back to one unpaged list, as client-go does."""
    if not hasattr(bare_cluster, "faults"):
        pytest.skip("needs the local cluster's fault injection")
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    for i in range(7):
        client.create(CONFIGMAPS, ns, configmap(f"e{i}"))
    armed = [expiries]

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        if armed[0] > 0 and obj["metadata"]["name"] == "e0":  # a first page: its token expires
            armed[0] -= 1
            bare_cluster.faults.fail("list", "configmaps", code=410, count=1)
        return obj

    listed = client.list(CONFIGMAPS, ns, limit=3, transform=transform)
    names = [o["metadata"]["name"] for o in listed["items"]]
    assert names == [f"e{i}" for i in range(7)], "every object exactly once"
    assert armed == [0]


def test_probe_reads_one_page_whatever_the_list_size(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    for i in range(5):
        client.create(CONFIGMAPS, ns, configmap(f"p{i}"))
    lists_before = bare_cluster.request_count("list", "configmaps")
    client.probe(CONFIGMAPS, ns)
    assert bare_cluster.request_count("list", "configmaps") - lists_before == 1
    unserved = Resource("example.invalid", "v1", "widgets", "Widget")
    with pytest.raises(ApiError) as exc:
        client.probe(unserved)
    assert is_not_found(exc.value)


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_5xx_is_retried_with_backoff(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("a"))
    bare_cluster.faults.fail("get", "configmaps", code=500, count=2)
    before = bare_cluster.request_count("get", "configmaps")
    errors_before = rest_count("500", "GET", client.host)
    assert client.get(CONFIGMAPS, ns, "a")["metadata"]["name"] == "a"
    assert bare_cluster.request_count("get", "configmaps") - before == 3
    assert rest_count("500", "GET", client.host) - errors_before == 2


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_retries_are_bounded(bare_cluster: Any) -> None:
    client = make_client(bare_cluster, max_retries=2)
    ns = fresh_namespace(client)
    bare_cluster.faults.fail("get", "configmaps", code=500)
    before = bare_cluster.request_count("get", "configmaps")
    with pytest.raises(ApiError) as exc:
        client.get(CONFIGMAPS, ns, "a")
    assert exc.value.status == 500
    assert bare_cluster.request_count("get", "configmaps") - before == 3


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_cancelled_retries_end_a_back_off_under_way(bare_cluster: Any) -> None:
    """Shutdown's `cancel_retries`: a request sleeping a long back-off raises its error now."""
    client = make_client(bare_cluster, backoff_base=60.0, backoff_cap=60.0)
    ns = fresh_namespace(client)
    bare_cluster.faults.fail("get", "configmaps", code=500)
    before = bare_cluster.request_count("get", "configmaps")
    raised: list[BaseException] = []

    def get() -> None:
        try:
            client.get(CONFIGMAPS, ns, "a")
        except BaseException as err:  # handed to the test thread
            raised.append(err)

    getter = threading.Thread(target=get, daemon=True)
    getter.start()
    try:
        wait_for(
            lambda: bare_cluster.request_count("get", "configmaps") - before == 1,
            what="the first attempt answered 500",
        )
        # The getter now sleeps 30-60 s before its second attempt; the clone shares the switch.
        client.with_rate_limit(5.0, 10).cancel_retries()
        getter.join(10)
        assert not getter.is_alive(), "the back-off ended when retries were cancelled"
    finally:
        bare_cluster.faults.clear()
    assert len(raised) == 1 and isinstance(raised[0], ApiError) and raised[0].status == 500
    assert bare_cluster.request_count("get", "configmaps") - before == 1


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_after_cancelled_retries_every_request_gets_one_attempt(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("a"))
    client.cancel_retries()
    bare_cluster.faults.fail("get", "configmaps", code=500, count=1)
    bare_cluster.faults.fail("create", "configmaps", code=500, count=1)
    gets = bare_cluster.request_count("get", "configmaps")
    creates = bare_cluster.request_count("create", "configmaps")
    try:
        with pytest.raises(ApiError) as got:
            client.get(CONFIGMAPS, ns, "a")
        # An ambiguous create is neither read back nor sent again.
        with pytest.raises(ApiError) as created:
            client.create(CONFIGMAPS, ns, configmap("b"))
    finally:
        bare_cluster.faults.clear()
    assert got.value.status == 500 and created.value.status == 500
    assert bare_cluster.request_count("get", "configmaps") - gets == 1
    assert bare_cluster.request_count("create", "configmaps") - creates == 1
    # Nothing else changed: a request that succeeds still does.
    assert client.get(CONFIGMAPS, ns, "a")["metadata"]["name"] == "a"


@pytest.mark.local_only("counts requests through the embedded server's hooks")
def test_cancelled_retries_end_a_wait_for_the_rate_limiter(bare_cluster: Any) -> None:
    """A request queued behind the token bucket at shutdown is not sent: the rest of a batch
    of creates used to drain at the client's QPS before the process could exit."""
    client = make_client(bare_cluster, qps=0.05, burst=2)  # a token every 20 s after two
    ns = fresh_namespace(client)  # the first token
    creates = bare_cluster.request_count("create", "configmaps")
    client.create(CONFIGMAPS, ns, configmap("a"))  # the second
    raised: list[BaseException] = []

    def create() -> None:
        try:
            client.create(CONFIGMAPS, ns, configmap("b"))
        except BaseException as err:  # handed to the test thread
            raised.append(err)

    creator = threading.Thread(target=create, daemon=True)
    creator.start()
    creator.join(0.3)
    assert creator.is_alive(), "the create waits for the next token"
    client.with_rate_limit(5.0, 10).cancel_retries()  # the clone shares the switch
    creator.join(10)
    assert not creator.is_alive(), "the wait ended when retries were cancelled"
    assert len(raised) == 1 and isinstance(raised[0], ApiConnectionError), raised
    assert "client rate limiter Wait returned an error" in str(raised[0])
    assert bare_cluster.request_count("create", "configmaps") - creates == 1  # "b" never sent
    # A request with a token at hand still gets its one attempt.
    assert client.with_rate_limit(5.0, 10).get(CONFIGMAPS, ns, "a")["metadata"]["name"] == "a"


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_429_is_retried_honouring_retry_after(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    bare_cluster.faults.fail("create", "configmaps", code=429, count=1)
    before = bare_cluster.request_count("create", "configmaps")
    start = time.monotonic()
    client.create(CONFIGMAPS, ns, configmap("a"))
    assert time.monotonic() - start >= 0.9, "the server's Retry-After: 1 was honoured"
    assert bare_cluster.request_count("create", "configmaps") - before == 2


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_errors_that_are_not_transient_are_not_retried(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    bare_cluster.faults.fail("get", "configmaps", code=403, count=5)
    before = bare_cluster.request_count("get", "configmaps")
    with pytest.raises(ApiError) as exc:
        client.get(CONFIGMAPS, ns, "a")
    assert exc.value.status == 403
    assert bare_cluster.request_count("get", "configmaps") - before == 1


def test_create_without_decoding_returns_nothing_but_creates_and_still_raises(
    bare_cluster: Any, mocker: Any
) -> None:
    """`decode=False`: the object is created, its answer is not decoded (no JSON decode is
    called for it), `{}` comes back, and a refusal still raises."""
    from ascendjob_controller.kube import jsoncodec

    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    loads = mocker.spy(jsoncodec, "loads")
    assert client.create(CONFIGMAPS, ns, configmap("quiet"), decode=False) == {}
    assert loads.call_count == 0
    assert client.get(CONFIGMAPS, ns, "quiet")["data"] == {"k": "v"}
    with pytest.raises(ApiError) as exc:
        client.create(CONFIGMAPS, ns, configmap("quiet"), decode=False)
    assert is_already_exists(exc.value)


def test_delete_without_decoding_returns_nothing_but_deletes_and_still_raises(
    bare_cluster: Any, mocker: Any
) -> None:
    """`decode=False` on a delete: gone on the server, `{}` back without a JSON decode, and
    a delete of what is not there still raises NotFound."""
    from ascendjob_controller.kube import jsoncodec

    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("going"))
    loads = mocker.spy(jsoncodec, "loads")
    assert client.delete(CONFIGMAPS, ns, "going", decode=False) == {}
    assert loads.call_count == 0
    with pytest.raises(ApiError) as exc:
        client.get(CONFIGMAPS, ns, "going")
    assert is_not_found(exc.value)
    with pytest.raises(ApiError) as exc:
        client.delete(CONFIGMAPS, ns, "going", decode=False)
    assert is_not_found(exc.value)


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_create_failing_with_5xx_is_read_back_not_blindly_resent(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    bare_cluster.faults.fail("create", "configmaps", code=500, count=1)
    creates = bare_cluster.request_count("create", "configmaps")
    gets = bare_cluster.request_count("get", "configmaps")
    obj = client.create(CONFIGMAPS, ns, configmap("a"))
    assert obj["metadata"]["name"] == "a"
    assert bare_cluster.request_count("get", "configmaps") - gets == 1, "read back first"
    assert bare_cluster.request_count("create", "configmaps") - creates == 2


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_create_that_times_out_is_not_duplicated(bare_cluster: Any) -> None:
    """The server is slow: the client times out while the create is still in flight."""
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    bare_cluster.faults.latency(1.0, verb="create")
    obj = client.create(CONFIGMAPS, ns, configmap("slow"), timeout=0.3)
    bare_cluster.faults.clear()
    items = client.list(CONFIGMAPS, ns)["items"]
    assert [o["metadata"]["name"] for o in items] == ["slow"]
    assert obj["metadata"]["uid"] == items[0]["metadata"]["uid"]


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_create_without_read_back_resends_and_takes_already_exists_as_landed(
    bare_cluster: Any,
) -> None:
    """The event recorder's way (it may not GET events): the slow create lands, the re-sent
    one gets 409, and that counts as success, with no GET and still one object."""
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    bare_cluster.faults.latency(1.0, verb="create", count=1)
    gets = bare_cluster.request_count("get", "configmaps")
    creates = bare_cluster.request_count("create", "configmaps")
    obj = client.create(CONFIGMAPS, ns, configmap("blind"), timeout=0.3, read_back=False)
    bare_cluster.faults.clear()
    assert obj["metadata"]["name"] == "blind"
    assert bare_cluster.request_count("get", "configmaps") - gets == 0, "never read back"
    assert bare_cluster.request_count("create", "configmaps") - creates >= 2, "re-sent"
    items = client.list(CONFIGMAPS, ns)["items"]
    assert [o["metadata"]["name"] for o in items] == ["blind"]


def test_every_request_is_counted_and_timed_by_its_labels(bare_cluster: Any) -> None:
    """The metrics' children are looked up once per label set; each request still counts."""
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("m"))

    def timed(verb: str) -> float:
        labels = {"verb": verb, "host": client.host}
        value = metrics.REGISTRY.get_sample_value(
            "rest_client_request_duration_seconds_count", labels
        )
        return value or 0.0

    ok, missing, gets = (
        rest_count("200", "GET", client.host),
        rest_count("404", "GET", client.host),
        timed("GET"),
    )
    for _ in range(3):
        client.get(CONFIGMAPS, ns, "m")
    for _ in range(2):
        with pytest.raises(ApiError):
            client.get(CONFIGMAPS, ns, "absent")
    assert rest_count("200", "GET", client.host) - ok == 3
    assert rest_count("404", "GET", client.host) - missing == 2
    assert timed("GET") - gets == 5


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_generate_name_create_is_never_retried(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    bare_cluster.faults.latency(1.0, verb="create")
    body = {"metadata": {"generateName": "gen-"}, "data": {}}
    creates = bare_cluster.request_count("create", "configmaps")
    posts = rest_total("POST", client.host)
    with pytest.raises(ApiConnectionError) as exc:
        client.create(CONFIGMAPS, ns, body, timeout=0.3)
    assert exc.value.ambiguous
    bare_cluster.faults.clear()
    assert bare_cluster.request_count("create", "configmaps") - creates == 1
    # The server finishes the slow create (the object shows up): nothing of that call is in
    # flight any more. Then exactly one POST was sent, as the client and the server count it,
    # and exactly one object exists.
    wait_for(lambda: len(client.list(CONFIGMAPS, ns)["items"]) == 1, what="the one create")
    assert rest_total("POST", client.host) - posts == 1, "the client sent one POST"
    assert bare_cluster.request_count("create", "configmaps") - creates == 1
    assert len(client.list(CONFIGMAPS, ns)["items"]) == 1, "no second object ever appears"


def test_qps_is_limited(bare_cluster: Any) -> None:
    client = make_client(bare_cluster, qps=5.0, burst=1)
    ns = fresh_namespace(client)  # takes the one burst token
    start = time.monotonic()
    for _ in range(10):
        with pytest.raises(ApiError):
            client.get(CONFIGMAPS, ns, "missing")
    # 10 more requests at 5/s cannot take less than ~2 s, however fast the machine is.
    assert time.monotonic() - start >= 1.9


def test_qps_is_shared_across_threads(bare_cluster: Any) -> None:
    client = make_client(bare_cluster, qps=10.0, burst=1)
    ns = fresh_namespace(client)
    start = time.monotonic()

    def hammer() -> None:
        for _ in range(5):
            client.list(CONFIGMAPS, ns)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert time.monotonic() - start >= 1.9, "20 requests at 10/s overall"


def test_connection_refused_is_retried_then_raised() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from kubernetes import client as k8s

    cfg = k8s.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.retries = False
    kube = KubeClient(k8s.ApiClient(cfg), max_retries=2, backoff_base=0.01)
    with pytest.raises(ApiConnectionError) as exc:
        kube.get(CONFIGMAPS, "default", "x")
    assert not exc.value.ambiguous
    assert rest_count("<error>", "GET", kube.host) == 3


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_watch_streams_events_and_raises_410(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    rv = client.list(CONFIGMAPS, ns)["metadata"]["resourceVersion"]
    client.create(CONFIGMAPS, ns, configmap("w1"))
    client.delete(CONFIGMAPS, ns, "w1")
    seen = []
    with client.watch(
        CONFIGMAPS, ns, resource_version=rv, timeout_seconds=2, read_timeout=10
    ) as stream:
        for kind, obj in stream:
            seen.append((kind, obj["metadata"].get("name")))
            if len(seen) == 2:
                break
    assert seen == [("ADDED", "w1"), ("DELETED", "w1")]
    bare_cluster.faults.expire_next_watch()
    with pytest.raises(ApiError) as exc:
        for _ in client.watch(
            CONFIGMAPS, ns, resource_version=rv, timeout_seconds=2, read_timeout=10
        ):
            pass
    assert is_gone(exc.value)


def test_watch_ends_when_the_server_timeout_passes(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    rv = client.list(CONFIGMAPS, ns)["metadata"]["resourceVersion"]
    kinds = [
        k
        for k, _ in client.watch(
            CONFIGMAPS, ns, resource_version=rv, timeout_seconds=1, read_timeout=30
        )
    ]
    assert set(kinds) <= {"BOOKMARK"}


def test_close_from_another_thread_unblocks_the_reader(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    rv = client.list(CONFIGMAPS, ns)["metadata"]["resourceVersion"]
    stream = client.watch(
        CONFIGMAPS,
        ns,
        resource_version=rv,
        timeout_seconds=60,
        read_timeout=90,
        allow_bookmarks=False,
    )
    done = threading.Event()
    reading = threading.Event()

    def read() -> None:
        for _ in stream:
            reading.set()  # then back to a read that only close() can end
        done.set()

    thread = threading.Thread(target=read)
    thread.start()
    client.create(CONFIGMAPS, ns, configmap("wake"))
    assert reading.wait(30), "the reader got the first event"
    assert not done.is_set(), "the stream stays open with nothing more to read"
    stream.close()
    assert done.wait(30), "close() woke the blocked reader"
    thread.join(30)


def test_a_silent_watch_drops_the_idle_connections_so_the_next_write_dials_afresh(
    bare_cluster: Any,
) -> None:
    """After a silent partition the pooled keep-alive connections are as dead as the watch.
    Once the watch is declared dead, a write must go out on a new connection and succeed,
    not wait its whole request timeout on a dead socket (issue 10, section 1)."""
    proxy = BlackholeProxy(bare_cluster.port)
    try:
        client = proxied_client(proxy, bare_cluster, request_timeout=20.0, max_retries=0)
        ns = fresh_namespace(make_client(bare_cluster))
        rv = client.list(CONFIGMAPS, ns)["metadata"]["resourceVersion"]
        stream = client.watch(
            CONFIGMAPS, ns, resource_version=rv, timeout_seconds=60, read_timeout=1.5
        )
        client.list(CONFIGMAPS, ns)  # a second connection, idle in the pool afterwards
        assert proxy.blackhole() >= 2, "the watch and the idle pooled connection went dead"
        with pytest.raises(WatchTimeoutError):
            for _ in stream:
                pass
        # Writes in parallel, as a controller's workers send them: between them they take
        # every pooled connection, the fresh one the closed watch left and the dead idle one.
        took: list[float] = []

        def create(name: str) -> None:
            start = time.monotonic()
            client.create(CONFIGMAPS, ns, configmap(name))
            took.append(time.monotonic() - start)

        threads = [threading.Thread(target=create, args=(f"after-{i}",)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        # A dead pooled connection would take the full 20 s request timeout, then fail.
        assert len(took) == 3, "a create failed (on a dead connection?)"
        assert max(took) < 10.0, f"a create waited {max(took):.1f} s on a dead connection"
    finally:
        proxy.close()
