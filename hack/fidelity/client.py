"""HTTP access to one API server with its kubeconfig's credentials, plus streamed watches.

Plain `requests`, not a Kubernetes client: the suite compares wire-level answers (codes,
bodies, watch lines), which a typed client would decode, default and hide.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import urllib3
import yaml


@dataclass
class Response:
    """What a comparison looks at: the status code, the decoded body and a few headers."""

    code: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


class Server:
    """One API server: its URL and a session authenticated as its kubeconfig's user."""

    def __init__(self, name: str, kubeconfig: Path) -> None:
        self.name = name
        config = yaml.safe_load(Path(kubeconfig).read_text())
        cluster = config["clusters"][0]["cluster"]
        user = (config.get("users") or [{}])[0].get("user") or {}
        self.url = str(cluster["server"]).rstrip("/")
        self._tmp = Path(tempfile.mkdtemp(prefix=f"fidelity-{name}-"))
        self.session = requests.Session()
        # Not the environment's CA bundle or proxies: only this kubeconfig's own trust.
        self.session.trust_env = False
        self.session.verify = self._file(cluster, "certificate-authority") or True
        cert, key = self._file(user, "client-certificate"), self._file(user, "client-key")
        if cert and key:
            self.session.cert = (cert, key)
        if user.get("token"):
            self.session.headers["Authorization"] = f"Bearer {user['token']}"
        adapter = requests.adapters.HTTPAdapter(pool_connections=8, pool_maxsize=32)
        self.session.mount("https://", adapter)
        self.session.mount("http://", adapter)
        urllib3.disable_warnings()

    def close(self) -> None:
        """Close the session and remove the credentials written for it (a client key)."""
        self.session.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _file(self, section: dict[str, Any], key: str) -> str | None:
        """A kubeconfig credential as a file path (requests wants files, not data)."""
        if section.get(key):
            return str(section[key])
        data = section.get(f"{key}-data")
        if not data:
            return None
        path = self._tmp / key
        path.write_bytes(base64.b64decode(data))
        return str(path)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        raw: bytes | None = None,
    ) -> Response:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"Accept": accept}
        if data is not None:
            headers["Content-Type"] = content_type
        resp = self.session.request(method, self.url + path, data=data, headers=headers, timeout=60)
        return Response(resp.status_code, _decode(resp.content), dict(resp.headers))

    def watch(self, path: str, accept: str = "application/json") -> Watch:
        return Watch(self, path, accept)


class Watch:
    """A watch stream read on a thread; collect() returns the events seen so far."""

    def __init__(self, server: Server, path: str, accept: str) -> None:
        self.events: list[Any] = []
        self.code = 0
        self._done = threading.Event()
        self._opened = threading.Event()
        self._resp: requests.Response | None = None
        self._thread = threading.Thread(
            target=self._run, args=(server, path, accept), daemon=True, name="fidelity-watch"
        )
        self._thread.start()
        self._opened.wait(30)

    def _run(self, server: Server, path: str, accept: str) -> None:
        try:
            resp = server.session.get(
                server.url + path, headers={"Accept": accept}, stream=True, timeout=(10, 60)
            )
            self._resp = resp
            self.code = resp.status_code
            self._opened.set()
            if resp.status_code != 200:
                self.events.append(_decode(resp.content))
                return
            for line in resp.iter_lines():
                if line:
                    self.events.append(_decode(line))
        except (requests.RequestException, AttributeError, ValueError):
            pass  # closed by collect(), or the server ended the stream
        finally:
            self._opened.set()
            self._done.set()

    def collect(self, count: int, timeout: float) -> Response:
        """Wait until `count` events arrived, the stream ended, or `timeout` passed."""
        deadline = time.monotonic() + timeout
        while len(self.events) < count and not self._done.is_set():
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        events = list(self.events[:count])  # what arrives later depends on timing
        self.close()
        return Response(self.code, events)

    def close(self) -> None:
        if self._resp is not None:
            with contextlib.suppress(Exception):
                self._resp.close()
        self._thread.join(timeout=5)
