"""LocalCluster: the embedded API server, garbage collector and simulated kubelet together.

This is the imperative shell tests and the CLI hold: start() serves on 127.0.0.1 and writes a
kubeconfig pointing at it; stop() ends watches, the kubelet and the server threads.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from ascendjob_controller.localcluster import builtin
from ascendjob_controller.localcluster.faults import Faults
from ascendjob_controller.localcluster.gc import GarbageCollector
from ascendjob_controller.localcluster.goquote import go_json
from ascendjob_controller.localcluster.registry import Registry
from ascendjob_controller.localcluster.server import ApiHTTPServer, ServerState
from ascendjob_controller.localcluster.store import Store
from ascendjob_controller.localcluster.verbs import Api

CRD_DIR = Path(__file__).resolve().parents[2] / "manifests" / "crd"


def kubeconfig_text(url: str) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": url}}],
        "users": [{"name": "local", "user": {}}],
        "contexts": [
            {
                "name": "local",
                "context": {"cluster": "local", "user": "local", "namespace": "default"},
            }
        ],
        "current-context": "local",
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def with_last_applied(doc: dict[str, Any]) -> dict[str, Any]:
    """The manifest as `kubectl apply` would have stored it, annotation included.

    Preloaded CRDs then look installed by `kubectl apply -f manifests/crd/`, so applying that
    directory again reports "unchanged" instead of warning about a missing annotation. The
    annotation is kubectl's encoding: sorted compact JSON with annotations {} and Go's escapes.
    """
    obj = json.loads(json.dumps(doc))
    obj.setdefault("metadata", {}).setdefault("annotations", {})
    encoded = go_json(obj)
    obj["metadata"]["annotations"][LAST_APPLIED] = encoded + "\n"
    return obj


#: kube-apiserver stores JSON nested up to 10,000 levels; so must the test bed, whose
#: decoder (C, on the thread's stack) and patch code (deepcopy) recurse per level. Without
#: this a status PATCH of a job nested 500 deep answered 500 (found by make fuzz).
DEEP_RECURSION_LIMIT = 30_000
THREAD_STACK_BYTES = 64 * 1024 * 1024


def _allow_deep_documents() -> None:
    """Process-wide, for every thread started from now on: the server's request threads."""
    threading.stack_size(THREAD_STACK_BYTES)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_RECURSION_LIMIT))


class LocalCluster:
    backend = "local"

    def __init__(
        self,
        kubeconfig_path: Path,
        kubelet: bool = True,
        port: int = 0,
        watch_window: int = 10_000,
        bookmark_interval: float = 5.0,
        crd_dir: Path | None = CRD_DIR,
        nodes: int = 1,
        compaction_interval: float = 300.0,
    ) -> None:
        self.kubeconfig_path = Path(kubeconfig_path)
        self.kubelet_enabled = kubelet
        self.nodes = nodes  # simulated nodes of the kubelet, 8 NPUs each
        self._requested_port = port
        self.store = Store(window=watch_window, compaction_interval=compaction_interval)
        self.registry = Registry()
        self.api = Api(self.store, self.registry)
        self.faults = Faults()
        self.faults.on_drop = self._wake_watchers
        self.state = ServerState(self.api, self.registry, self.faults, bookmark_interval)
        self.gc = GarbageCollector(self.api)
        self._crd_dir = crd_dir
        self._server: ApiHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._kubelet: Any = None
        self._seed()

    def _seed(self) -> None:
        for name in builtin.INITIAL_NAMESPACES:
            self.api.create(
                builtin.NAMESPACES, "", {"metadata": {"name": name}}, manager="kube-apiserver"
            )
        self.api.create(
            builtin.SERVICES,
            "default",
            {
                "metadata": {
                    "name": "kubernetes",
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "clusterIP": "10.96.0.1",
                    "ports": [{"name": "https", "port": 443, "targetPort": 6443}],
                },
            },
            manager="kube-apiserver",
        )
        if self._crd_dir is not None and self._crd_dir.is_dir():
            for path in sorted(self._crd_dir.glob("*.yaml")):
                for doc in yaml.safe_load_all(path.read_text()):
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        self.api.create(
                            builtin.CRDS,
                            "",
                            with_last_applied(doc),
                            manager="kubectl-client-side-apply",
                        )

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("cluster not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Serve; after a stop(), serve again on the same port with the same objects.

        Restarting lets tests simulate an API server outage: clients see connection errors
        while it is down and the same cluster when it comes back.
        """
        _allow_deep_documents()
        self.state.stopping.clear()
        self._server = ApiHTTPServer(("127.0.0.1", self._requested_port), self.state)
        self._requested_port = self.port
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="localcluster-http",
            daemon=True,
        )
        self._thread.start()
        self.gc.start()
        self.kubeconfig_path.parent.mkdir(parents=True, exist_ok=True)
        self.kubeconfig_path.write_text(kubeconfig_text(self.url))
        if self.kubelet_enabled:
            from ascendjob_controller.localcluster import kubelet
            from ascendjob_controller.localcluster.inprocess import DirectClient

            # In-process: the same handler code as over HTTP, without the round trips that
            # were a third of the bed's CPU (inprocess.py).
            self._kubelet = kubelet.SimulatedKubelet(
                self.url,
                nodes=self.nodes,
                transport=DirectClient(self.state, user_agent=kubelet.USER_AGENT),
            )
            self._kubelet.register_node()
            self._kubelet.start()

    def _wake_watchers(self) -> None:
        self.store.wake_all()

    def stop(self) -> None:
        """Stop serving (idempotent); the objects stay for a later start()."""
        if self._thread is None:
            return
        self.state.stopping.set()
        self._wake_watchers()
        if self._kubelet is not None:
            self._kubelet.stop()
            self._kubelet = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.close_connections()
        self._thread.join(timeout=10)
        self._thread = None
        self.gc.stop()

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- for tests -------------------------------------------------------------------------
    def api_client(self) -> Any:
        """An official-client ApiClient pointed at this cluster."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        return client.ApiClient(configuration)

    def credentials(self) -> None:
        """What a client needs to authenticate: nothing (plain HTTP, no authentication)."""
        return None

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        """Requests served so far, by verb (`list`, `create`...) and resource (`pods`)."""
        return self.state.request_count(verb, resource)

    def wait_gc_idle(self, timeout: float = 10.0) -> bool:
        """Wait until the garbage collector has nothing queued (for deterministic tests)."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.gc.idle():
                return True
            time.sleep(0.02)
        return False
