"""The perfect client names itself on every request, its watches included.

The API server files managedFields and audit records under the User-Agent's product, and the
bed's probes attribute CPU by it; an anonymous watch was counted as nobody's.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from hack.peers.perfect import USER_AGENT, Api, _watch_once
from tests.httpstub import serving


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    agents: list[str | None] = []

    def do_GET(self) -> None:
        type(self).agents.append(self.headers.get("User-Agent"))
        obj = {"metadata": {"name": "p", "resourceVersion": "7"}}
        line = json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(line)))
        self.end_headers()
        self.wfile.write(line)

    def do_PATCH(self) -> None:
        type(self).agents.append(self.headers.get("User-Agent"))
        body = b"{}"
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.agents = []
    with serving(_Recorder) as url:
        yield url


def test_watches_and_writes_carry_the_user_agent(server: str) -> None:
    events: queue.Queue[Any] = queue.Queue()
    rv = _watch_once(Api(server), "/api/v1/pods?watch=true", "1", "pod", events)
    Api(server).call("PATCH", "/apis/x/v1/namespaces/n/ascendjobs/j/status", {}, patch=True)
    assert rv == "7"
    assert events.get_nowait()[1] == "ADDED"
    assert _Recorder.agents == [USER_AGENT, USER_AGENT]
