"""Benchmark the embedded API server the way the controller's benchmarks will load it.

Runs `python -m ascendjob_controller local-cluster --no-kubelet` in a subprocess (so client
and server do not share a GIL), then measures:
  1. pod creates per second from 4 client threads (keep-alive HTTP, like urllib3 pools);
  2. the time to LIST 10,000 pods (full response received);
  3. watch events per second delivered to 10 concurrent watchers.
Prints the figures; every phase is bounded in time and the server is always stopped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `hack.*` when run as a script (then only hack/ is on the path)

from hack.bench_controller import stop_on_sigterm  # noqa: E402

NAMESPACE = "bench"


class Client:
    """One keep-alive connection, as a pooled client thread would hold."""

    def __init__(self, host: str, port: int) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=60)

    def request(self, method: str, path: str, body: object | None = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, resp.read()


def start_server(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ascendjob_controller",
            "local-cluster",
            "--no-kubelet",
            "--port",
            "0",
            "--kubeconfig",
            str(tmp / "kubeconfig"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("ready "):
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench", "index": name[-1]}},
        "spec": {
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]
        },
    }


def bench_creates(host: str, port: int, total: int, threads: int) -> float:
    per_thread = total // threads
    errors: list[str] = []

    def worker(t: int) -> None:
        client = Client(host, port)
        for i in range(per_thread):
            code, body = client.request(
                "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pod(f"pod-{t}-{i:05d}")
            )
            if code != 201:
                errors.append(body.decode()[:200])
                return

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"create failed: {errors[0]}")
    return per_thread * threads / elapsed


def bench_list(host: str, port: int, expect: int, rounds: int = 3) -> tuple[float, int]:
    client = Client(host, port)
    best = float("inf")
    size = 0
    for _ in range(rounds):
        start = time.perf_counter()
        code, body = client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
        best = min(best, time.perf_counter() - start)
        size = len(body)
        assert code == 200
    items = len(json.loads(body)["items"])
    if items != expect:
        raise SystemExit(f"LIST returned {items} pods, expected {expect}")
    return best, size


def bench_watch(host: str, port: int, watchers: int, events: int) -> float:
    client = Client(host, port)
    _, body = client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps?limit=1")
    rv = json.loads(body)["metadata"]["resourceVersion"]
    received = [0] * watchers
    done = threading.Event()
    ready = threading.Barrier(watchers + 1)
    finished = [threading.Event() for _ in range(watchers)]

    def watch(idx: int) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=120)
        conn.request(
            "GET",
            f"/api/v1/namespaces/{NAMESPACE}/configmaps?watch=true"
            f"&resourceVersion={rv}&timeoutSeconds=120",
        )
        resp = conn.getresponse()
        ready.wait()
        while received[idx] < events and not done.is_set():
            line = resp.readline()
            if not line:
                break
            received[idx] += 1
        finished[idx].set()
        conn.close()

    threads = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(watchers)]
    for t in threads:
        t.start()
    ready.wait()
    start = time.perf_counter()
    writer = Client(host, port)
    for i in range(events):
        writer.request(
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/configmaps",
            {"metadata": {"name": f"cm-{i:05d}"}, "data": {"i": str(i)}},
        )
    for f in finished:
        f.wait(timeout=120)
    elapsed = time.perf_counter() - start
    done.set()
    delivered = sum(received)
    if delivered != watchers * events:
        print(f"  warning: delivered {delivered} of {watchers * events} events", file=sys.stderr)
    return delivered / elapsed


def main() -> int:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--watch-events", type=int, default=2_000)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp))
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", int(parts.port or 80)
        try:
            Client(host, port).request(
                "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}
            )
            rate = bench_creates(host, port, args.pods, args.threads)
            print(f"pod creates/s ({args.threads} threads, {args.pods} pods): {rate:,.0f}")
            seconds, size = bench_list(host, port, args.pods // args.threads * args.threads)
            print(f"LIST {args.pods} pods: {seconds:.3f} s ({size / 1e6:.1f} MB)")
            eps = bench_watch(host, port, args.watchers, args.watch_events)
            print(f"watch events/s delivered to {args.watchers} watchers: {eps:,.0f}")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        print(f"server exited with {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
