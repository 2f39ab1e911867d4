"""RealCluster: etcd, kube-apiserver and kube-controller-manager built from Go modules.

The same contract as LocalCluster, so tests and the CLI can hold either: start() serves on
127.0.0.1, writes an admin kubeconfig and applies manifests/crd/; stop() ends every process it
started. The binaries come from `make real-cluster-bin` (hack/realcluster/build.sh); nothing is
downloaded here. TLS material (a CA, the serving certificate, an admin client certificate in
`system:masters`, the controller-manager's certificate and the service-account key) is made
with the openssl command line at start, in a temporary directory removed at stop.

The simulated kubelet is the same one the local cluster runs; here it authenticates with the
admin certificate, which is cluster-admin (the Node authorizer only limits kubelet identities).
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = REPO_ROOT / "manifests" / "crd"
BIN_DIR = Path(
    os.environ.get("ASCENDJOB_REALCLUSTER_BIN")
    or Path.home() / ".cache/ascendjob-controller/realcluster/bin"
)
SERVICE_CIDR = "10.96.0.0/16"
# Not root-ca-cert-publisher: its kube-root-ca.crt ConfigMap in every namespace would stand in
# every test that lists a namespace's ConfigMaps, and the simulated kubelet mounts nothing.
CONTROLLERS = "garbagecollector,namespace,serviceaccount,serviceaccount-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(pki: Path) -> None:
    """A CA, the apiserver's serving cert, client certs and the service-account key pair."""
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", "ca.key",
        "-out", "ca.crt", "-subj", "/CN=ascendjob-test-ca", cwd=pki,
    )  # fmt: skip
    (pki / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
        "extendedKeyUsage=serverAuth\n"
    )
    (pki / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subject, ext in (
        ("apiserver", "/CN=kube-apiserver", "san.ext"),
        ("admin", "/O=system:masters/CN=admin", "client.ext"),
        ("kcm", "/CN=system:kube-controller-manager", "client.ext"),
    ):
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
            f"{name}.csr", "-subj", subject, cwd=pki,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", f"{name}.crt", cwd=pki,
        )  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def kubeconfig_text(url: str, pki: Path, user: str = "admin") -> str:
    def data(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "real",
                "cluster": {"server": url, "certificate-authority-data": data("ca.crt")},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": data(f"{user}.crt"),
                    "client-key-data": data(f"{user}.key"),
                },
            }
        ],
        "contexts": [
            {"name": "real", "context": {"cluster": "real", "user": user, "namespace": "default"}}
        ],
        "current-context": "real",
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


class RealCluster:
    """A real control plane for tests; see the module docstring."""

    backend = "real"

    def __init__(
        self,
        kubeconfig_path: Path,
        kubelet: bool = True,
        port: int = 0,
        bin_dir: Path = BIN_DIR,
        crd_dir: Path | None = CRD_DIR,
        nodes: int = 1,
    ) -> None:
        self.kubeconfig_path = Path(kubeconfig_path)
        self.kubelet_enabled = kubelet
        self.nodes = nodes  # simulated nodes of the kubelet, 8 NPUs each
        self._port = port or free_port()
        self.bin_dir = Path(bin_dir)
        self._crd_dir = crd_dir
        self._procs: list[subprocess.Popen[bytes]] = []
        self._tmp: Path | None = None
        self._kubelet: Any = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._port}"

    @property
    def pki(self) -> Path:
        if self._tmp is None:
            raise RuntimeError("cluster not started")
        return self._tmp / "pki"

    # --- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        for binary in ("etcd", "kube-apiserver", "kube-controller-manager"):
            if not (self.bin_dir / binary).is_file():
                raise RuntimeError(
                    f"{self.bin_dir / binary} is missing: run `make real-cluster-bin` first"
                )
        self._tmp = Path(tempfile.mkdtemp(prefix="realcluster-"))
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> None:
        pki = self.pki
        pki.mkdir()
        make_pki(pki)
        deadline = time.monotonic() + timeout
        etcd_url = self._start_etcd()
        self._start_apiserver(etcd_url)
        self.kubeconfig_path.parent.mkdir(parents=True, exist_ok=True)
        self.kubeconfig_path.write_text(kubeconfig_text(self.url, pki))
        kcm_config = self._tmp_path("kcm.kubeconfig")
        kcm_config.write_text(kubeconfig_text(self.url, pki, user="kcm"))
        self._wait_ready(deadline)
        # CRDs first: the garbage collector learns the resources it watches from discovery at
        # start and re-reads it only every 30 s, so owner references on AscendJobs would
        # otherwise go unenforced for the first half minute.
        self._apply_crds(deadline)
        self._start_controller_manager(kcm_config)
        self._wait_default_service_account("default", deadline)
        if self.kubelet_enabled:
            from ascendjob_controller.localcluster import kubelet

            self._kubelet = kubelet.SimulatedKubelet(
                self.url, credentials=self.credentials(), nodes=self.nodes
            )
            self._kubelet.register_node()
            self._kubelet.start()

    def credentials(self) -> Any:
        from ascendjob_controller.localcluster.kubelet import Credentials

        return Credentials(
            ca_file=str(self.pki / "ca.crt"),
            cert_file=str(self.pki / "admin.crt"),
            key_file=str(self.pki / "admin.key"),
        )

    def _tmp_path(self, name: str) -> Path:
        assert self._tmp is not None
        return self._tmp / name

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self._tmp_path(f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [str(self.bin_dir / name), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._procs.append(proc)

    def _start_etcd(self) -> str:
        client, peer = free_port(), free_port()
        url = f"http://127.0.0.1:{client}"
        self._spawn(
            "etcd",
            [
                "--data-dir", str(self._tmp_path("etcd")),
                "--listen-client-urls", url, "--advertise-client-urls", url,
                "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-cluster", f"default=http://127.0.0.1:{peer}",
                "--listen-metrics-urls", f"http://127.0.0.1:{free_port()}",
                "--unsafe-no-fsync", "--quota-backend-bytes", str(4 << 30),
                "--log-level", "warn",
            ],
        )  # fmt: skip
        return url

    def _start_apiserver(self, etcd_url: str) -> None:
        pki = self.pki
        self._spawn(
            "kube-apiserver",
            [
                "--etcd-servers", etcd_url,
                "--bind-address", "127.0.0.1",
                "--advertise-address", "127.0.0.1",
                "--secure-port", str(self._port),
                "--tls-cert-file", str(pki / "apiserver.crt"),
                "--tls-private-key-file", str(pki / "apiserver.key"),
                "--client-ca-file", str(pki / "ca.crt"),
                "--service-cluster-ip-range", SERVICE_CIDR,
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", str(pki / "sa.pub"),
                "--service-account-signing-key-file", str(pki / "sa.key"),
                "--authorization-mode", "Node,RBAC",
                "--allow-privileged=true",
                "--endpoint-reconciler-type", "none",
                "--v", "1",
            ],
        )  # fmt: skip

    def _start_controller_manager(self, kubeconfig: Path) -> None:
        pki = self.pki
        self._spawn(
            "kube-controller-manager",
            [
                "--kubeconfig", str(kubeconfig),
                "--authentication-kubeconfig", str(kubeconfig),
                "--authorization-kubeconfig", str(kubeconfig),
                "--controllers", CONTROLLERS,
                "--service-account-private-key-file", str(pki / "sa.key"),
                "--root-ca-file", str(pki / "ca.crt"),
                "--use-service-account-credentials",
                "--leader-elect=false",
                "--secure-port", "0",
                "--concurrent-gc-syncs", "10",
                "--v", "1",
            ],
        )  # fmt: skip

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def get(self, path: str) -> tuple[int, bytes]:
        """A GET as admin (for readiness, metrics and tests)."""
        try:
            with urllib.request.urlopen(
                self.url + path, context=self._ssl_context(), timeout=10
            ) as resp:
                return int(resp.status), resp.read()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read()

    def _check_alive(self) -> None:
        for proc in self._procs:
            if proc.poll() is not None:
                name = Path(str(proc.args[0])).name  # type: ignore[index]
                log = self._tmp_path(f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{log}")

    def _wait(self, what: str, deadline: float, check: Any) -> None:
        while True:
            self._check_alive()
            try:
                if check():
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"real cluster: timed out waiting for {what}")
            time.sleep(0.2)

    def _wait_ready(self, deadline: float) -> None:
        self._wait("kube-apiserver /readyz", deadline, lambda: self.get("/readyz")[0] == 200)

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl") or "kubectl"
        return subprocess.run(
            [kubectl, "--kubeconfig", str(self.kubeconfig_path), *args],
            check=check,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def _apply_crds(self, deadline: float) -> None:
        if self._crd_dir is None or not self._crd_dir.is_dir():
            return
        self._wait(
            "the CRDs to apply",
            deadline,
            lambda: self.kubectl("apply", "-f", str(self._crd_dir), check=False).returncode == 0,
        )
        self.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")

    def _wait_default_service_account(self, namespace: str, deadline: float) -> None:
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
        self._wait(
            f"serviceaccount {namespace}/default", deadline, lambda: self.get(path)[0] == 200
        )

    def wait_default_service_account(self, namespace: str, timeout: float = 30.0) -> None:
        """Pods are refused in a namespace until the controller-manager made its account."""
        self._wait_default_service_account(namespace, time.monotonic() + timeout)

    def stop(self) -> None:
        """Stop the kubelet and every process (idempotent); the data directory goes too."""
        if self._kubelet is not None:
            self._kubelet.stop()
            self._kubelet = None
        for proc in reversed(self._procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        self._procs = []
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> RealCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- for tests -------------------------------------------------------------------------
    def api_client(self) -> Any:
        """An official-client ApiClient with the admin credentials."""
        from kubernetes import config

        return config.new_client_from_config(str(self.kubeconfig_path))

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        """Requests served so far, from kube-apiserver's own apiserver_request_total."""
        code, body = self.get("/metrics")
        if code != 200:
            raise RuntimeError(f"kube-apiserver /metrics answered {code}")
        total = 0.0
        for line in body.decode().splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels_text, _, value = line.rpartition(" ")
            labels = dict(
                part.split("=", 1)
                for part in labels_text[labels_text.index("{") + 1 : -1].split(",")
            )
            labels = {k: v.strip('"') for k, v in labels.items()}
            if verb is not None and labels.get("verb", "").lower() != verb.lower():
                continue
            if resource is not None and labels.get("resource") != resource:
                continue
            total += float(value)
        return int(total)


def main(argv: list[str] | None = None) -> int:
    """`hack/realcluster/run --port P --kubeconfig F [--no-kubelet]`: serve until a signal."""
    import argparse
    import threading

    parser = argparse.ArgumentParser(prog="hack/realcluster/run", description=main.__doc__)
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--no-kubelet", action="store_true")
    args = parser.parse_args(argv)
    cluster = RealCluster(Path(args.kubeconfig), kubelet=not args.no_kubelet, port=args.port)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster.start()
    except Exception as err:
        print(f"real cluster failed to start: {err}", file=sys.stderr)
        return 1
    try:
        print(f"ready {cluster.url}", flush=True)
        while not stop.is_set():
            stop.wait(1.0)
            cluster._check_alive()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
