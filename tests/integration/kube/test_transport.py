"""The thin transport keeps what the official client gave us: auth per request, the host's
path prefix, the user agent, query strings, bodies, and a pool that survives being cleared.

Against a small recording HTTP server, so the exact bytes on the wire can be checked.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import kubernetes
import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.kube import response_headers
from ascendjob_controller.kube.client import PODS, ApiError, KubeClient
from ascendjob_controller.kube.response_headers import HeadersResponse
from tests.httpstub import serving

pytestmark = pytest.mark.integration


class Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API server
    seen: list[dict[str, Any]] = []
    close_after = False  # answer with `Connection: close` and hang up
    hang_up_silently = False  # hang up after answering, without saying so
    delay = 0.0  # seconds before answering

    def _answer(self) -> None:
        time.sleep(Recorder.delay)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Recorder.seen.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
                "port": self.client_address[1],
            }
        )
        reply = json.dumps({"kind": "Pod", "metadata": {"name": "p"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        if Recorder.close_after:
            self.send_header("Connection", "close")
            self.close_connection = True
        if Recorder.hang_up_silently:
            self.close_connection = True
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Recorder.seen = []
    Recorder.close_after = Recorder.hang_up_silently = False
    with serving(Recorder) as url:
        yield url


def client_for(host: str, tokens: Iterator[str], proxy: str | None = None) -> KubeClient:
    cfg = kubernetes.client.Configuration()
    cfg.host = host
    cfg.proxy = proxy
    cfg.api_key = {"BearerToken": next(tokens)}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}

    def refresh(config: kubernetes.client.Configuration) -> None:  # a rotating token
        config.api_key = {"BearerToken": next(tokens)}

    cfg.refresh_api_key_hook = refresh
    api = kubernetes.client.ApiClient(configuration=cfg)
    api.user_agent = "ascendjob-controller/test"
    return KubeClient(api, qps=1000, burst=1000)


def test_auth_prefix_agent_query_and_body_on_the_wire(server: str) -> None:
    kube = client_for(server + "/prefix", iter(["t0", "t1", "t2", "t3"]))
    kube.get(PODS, "ns", "p")
    kube.patch(PODS, "ns", "p", {"metadata": {"labels": {"a": "b"}}})
    first, second = Recorder.seen
    # The refresh hook ran for each request: a rotated token is used at once.
    assert (first["headers"]["authorization"], second["headers"]["authorization"]) == (
        "Bearer t1",
        "Bearer t2",
    )
    assert first["path"] == "/prefix/api/v1/namespaces/ns/pods/p"
    assert first["headers"]["user-agent"] == "ascendjob-controller/test"
    assert first["headers"]["accept"] == "application/json"
    assert second["method"] == "PATCH"
    assert second["headers"]["content-type"] == "application/merge-patch+json"
    assert json.loads(second["body"]) == {"metadata": {"labels": {"a": "b"}}}


def test_query_strings_are_encoded(server: str) -> None:
    kube = client_for(server, iter(["t"] * 10))
    kube.list(PODS, "ns", label_selector="a in (x,y)")
    (request,) = Recorder.seen
    assert request["path"].startswith("/api/v1/namespaces/ns/pods?")
    assert "labelSelector=a+in+%28x%2Cy%29" in request["path"]


def test_connections_are_reused_and_survive_being_dropped(server: str) -> None:
    kube = client_for(server, iter(["t"] * 10))
    kube.get(PODS, "ns", "p")
    kube.get(PODS, "ns", "p")
    kube.drop_idle_connections()  # clears the pool manager: the cached pool is closed
    kube.get(PODS, "ns", "p")
    ports = [r["port"] for r in Recorder.seen]
    assert ports[0] == ports[1], "keep-alive: the second request reused the connection"
    assert ports[2] != ports[1], "after the drop, a fresh connection"


def test_responses_are_read_by_the_fast_header_reader(server: str, mocker: MockerFixture) -> None:
    begin = mocker.spy(HeadersResponse, "begin")
    email_parse = mocker.spy(response_headers, "_email_parse")
    kube = client_for(server, iter(["t"] * 10))
    assert kube.get(PODS, "ns", "p") == {"kind": "Pod", "metadata": {"name": "p"}}
    kube.drop_idle_connections()
    assert kube.get(PODS, "ns", "p")["kind"] == "Pod"  # a new pool after the drop: the same
    assert begin.call_count == 2
    email_parse.assert_not_called()  # plain headers from a real http.server


def test_a_configured_proxy_is_asked_for_the_api_servers_url(server: str) -> None:
    kube = client_for("http://kube.invalid:6443", iter(["t"] * 10), proxy=server)
    kube.get(PODS, "ns", "p")
    (request,) = Recorder.seen  # the recorder plays the proxy: the absolute URL reaches it
    assert request["path"] == "http://kube.invalid:6443/api/v1/namespaces/ns/pods/p"
    assert request["headers"]["authorization"] == "Bearer t"


def test_answers_read_whole_bypass_urlopen(server: str, mocker: MockerFixture) -> None:
    """Everything but a watch is one http.client exchange on a pooled connection."""
    import urllib3

    urlopen = mocker.spy(urllib3.HTTPConnectionPool, "urlopen")
    kube = client_for(server, iter(["t"] * 10))
    assert kube.get(PODS, "ns", "p")["metadata"] == {"name": "p"}
    kube.patch(PODS, "ns", "p", {"metadata": {"labels": {"a": "b"}}})
    kube.delete(PODS, "ns", "p")
    urlopen.assert_not_called()
    assert [r["method"] for r in Recorder.seen] == ["GET", "PATCH", "DELETE"]
    assert len({r["port"] for r in Recorder.seen}) == 1, "one kept-alive connection for all"


def test_a_server_that_closes_gets_a_fresh_connection_each_time(server: str) -> None:
    Recorder.close_after = True
    kube = client_for(server, iter(["t"] * 10))
    for _ in range(3):
        assert kube.get(PODS, "ns", "p")["kind"] == "Pod"
    ports = [r["port"] for r in Recorder.seen]
    assert len(set(ports)) == 3, "each answer said close: each request dialled afresh"


def test_a_connection_the_server_dropped_while_idle_is_not_reused(
    server: str, mocker: MockerFixture
) -> None:
    kube = client_for(server, iter(["t"] * 10))
    kube.get(PODS, "ns", "p")
    Recorder.hang_up_silently = True
    kube.get(PODS, "ns", "p")  # same connection, then the server hangs up unannounced
    Recorder.hang_up_silently = False
    time.sleep(0.2)  # the hang-up reaches our socket
    retry = mocker.spy(kube, "_sleep_backoff")
    assert kube.patch(PODS, "ns", "p", {"metadata": {}})["kind"] == "Pod"
    retry.assert_not_called()  # the dead connection was noticed before sending, not after
    ports = [r["port"] for r in Recorder.seen]
    assert ports[0] == ports[1] != ports[2]


def test_connections_of_a_burst_are_kept_for_the_next_one(
    server: str, tmp_path: Any, mocker: MockerFixture
) -> None:
    """As client-go keeps 25 idle connections per host: 20 requests at once (a batch of pod
    creates beside the watches and workers) leave 20 connections that the next 20 reuse. The
    official client's own pool (10 on 2 cores) dropped the rest, so each burst dialled anew."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    kube = KubeClient.from_kubeconfig(str(kubeconfig), qps=1000, burst=1000)
    mocker.patch.object(Recorder, "delay", 0.1)  # every request of a burst in flight at once

    def burst() -> set[int]:
        before = len(Recorder.seen)
        gate = threading.Barrier(20)

        def one() -> None:
            gate.wait()
            kube.get(PODS, "ns", "p")

        threads = [threading.Thread(target=one) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {r["port"] for r in Recorder.seen[before:]}

    first = burst()
    assert len(first) > 10, "the burst really held more connections than the old pool"
    assert burst() <= first, "the second burst dialled no new connection"


def test_a_reused_connection_keeps_its_read_timeout_without_setting_it_again(
    server: str, mocker: MockerFixture
) -> None:
    """settimeout is a syscall that lets go of the GIL: it is made only when the timeout
    changes. A kept-alive connection still times out a slow answer at the one asked for."""
    import socket

    timeouts: list[float | None] = []
    real = socket.socket.settimeout

    def recording(sock: socket.socket, value: float | None) -> None:
        timeouts.append(value)
        real(sock, value)

    mocker.patch.object(socket.socket, "settimeout", recording)
    kube = client_for(server, iter(["t"] * 10))
    kube.get(PODS, "ns", "p", timeout=0.5, retries=0)
    after_first = len(timeouts)
    kube.get(PODS, "ns", "p", timeout=0.5, retries=0)
    assert len(timeouts) == after_first, "same connection, same timeout: not set again"
    Recorder.delay = 1.0
    try:
        with pytest.raises(ApiError) as failed:
            kube.get(PODS, "ns", "p", timeout=0.3, retries=0)  # another timeout: set, and kept
    finally:
        Recorder.delay = 0.0
    assert failed.value.status == 0
    assert timeouts[-1] == 0.3
    assert len({r["port"] for r in Recorder.seen[:2]}) == 1
